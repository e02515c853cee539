"""The embedding-spaces page: every space with its backfill progress, the gate's last
comparisons (the evidence ``ragline embeddings promote`` records), flip and rollback
through ``ragline.store.spaces`` (the functions the CLI calls).

The evaluation gate runs the golden set against the query service (minutes): that stays
``ragline embeddings promote``. The console's flip is the gate's ``--force``: it needs a
reason, refuses an incomplete space, and is recorded as forced with the operator's name.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row

from ragline.store.pg_errors import pg_errors
from ragline.store.spaces import (
    SpaceIncomplete,
    count_missing,
    count_progress,
    get_space,
    list_spaces,
    promote,
    rollback_target,
)

__all__ = ["flip_space", "rollback_space", "spaces_state"]


async def spaces_state(conn: AsyncConnection) -> dict[str, Any]:
    out = []
    for s in await list_spaces(conn, include_retired=True):
        d: dict[str, Any] = {
            "name": s.name,
            "state": s.state,
            "model": s.model,
            "revision": s.revision,
            "dim": s.dim,
            "recipe": s.recipe,
            "promoted_at": s.promoted_at.isoformat() if s.promoted_at else None,
        }
        if s.state != "retired":
            d["vectors"], d["children"] = await count_progress(conn, s)
        out.append(d)
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            "SELECT e.at, e.action, s.name AS space, f.name AS from_space, e.actor, e.forced,"
            " e.reason, e.evidence FROM embedding_space_events e"
            " JOIN embedding_spaces s ON s.space_id = e.space_id"
            " LEFT JOIN embedding_spaces f ON f.space_id = e.from_space_id"
            " ORDER BY e.event_id DESC LIMIT 20"
        )
        events = [{**r, "at": r["at"].isoformat()} for r in await cur.fetchall()]
    return {"spaces": out, "events": events}


async def flip_space(
    conn: AsyncConnection, name: str, *, actor: str, reason: str
) -> dict[str, Any]:
    missing = await count_missing(conn, await get_space(conn, name))
    if missing:
        raise SpaceIncomplete(name, missing)
    old, new = await promote(
        conn,
        name,
        actor=actor,
        forced=True,
        reason=reason,
        evidence={"via": "console", "gate": "not run (use `ragline embeddings promote`)"},
    )
    return {"from": old.name, "to": new.name}


async def rollback_space(conn: AsyncConnection, *, actor: str, reason: str) -> dict[str, Any]:
    target = await rollback_target(conn)
    old, new = await promote(
        conn, target.name, actor=actor, action="rollback", forced=True, reason=reason
    )
    return {"from": old.name, "to": new.name}
