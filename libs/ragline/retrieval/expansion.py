"""Parent expansion: give each returned child its parent's wider text, once.

Parents are read under the same RLS scope as everything else (a parent carries its
document's ACL), and when several children share a parent only the best-ranked one is
kept: the parent text already contains the others, so repeating it would waste the
consumer's context window on duplicates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from psycopg import AsyncConnection

from ragline.auth.principal import Principal
from ragline.store.pg_errors import pg_errors

__all__ = ["dedupe_by_parent", "fetch_parents"]

T = TypeVar("T")


async def fetch_parents(
    conn: AsyncConnection, principal: Principal, parent_ids: Sequence[str]
) -> dict[str, str]:
    """parent chunk id -> text, for the parents the principal may see."""
    ids = sorted(set(parent_ids))
    if not ids:
        return {}
    with pg_errors():
        cur = await conn.execute(
            "SELECT c.chunk_id, c.text FROM chunks c JOIN documents d"
            " ON d.tenant_id = c.tenant_id AND d.document_id = c.document_id"
            " WHERE c.tenant_id = %s AND c.chunk_id = ANY(%s::text[]) AND c.level = 'parent'"
            " AND d.status = 'indexed' AND c.generation = d.generation",
            (principal.tenant, ids),
        )
        rows = await cur.fetchall()
    return {str(cid): str(text) for cid, text in rows}


def dedupe_by_parent(items: Sequence[T], parent_of: Callable[[T], str | None]) -> list[T]:
    """Keep the order; drop an item whose parent an earlier item already brings."""
    seen: set[str] = set()
    out: list[T] = []
    for it in items:
        p = parent_of(it)
        if p is not None:
            if p in seen:
                continue
            seen.add(p)
        out.append(it)
    return out
