"""The embedding-space registry (``embedding_spaces``), the per-space vector partitions
(``space_vectors``), the dual write, the backfill's reads and writes, and the flip.

Concurrency (docs/adr/0012-embedding-spaces.md): every indexer transaction that writes
chunks takes ``SPACES_LOCK`` *shared* before it reads which spaces are active;
``create_space``, ``promote``/``rollback`` and ``retire`` take it *exclusive*. So once a
space exists every later chunk write also writes that space (the backfill sees every
chunk written before), and a flip happens between indexer transactions, never inside
one. The query side reads the live space once per search and uses it for the query
vector, the dense leg and the answer-cache key, so a list never mixes spaces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from prometheus_client import Counter
from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ragline.errors import ConfigError, RaglineError
from ragline.hashing import sha256_hex as text_key
from ragline.store.embedding_cache import get_cached
from ragline.store.pg_errors import pg_errors
from ragline.store.space_model import Space, recipe_text, transform
from ragline.store.sql_text import rendered

__all__ = [
    "SPACES_LOCK",
    "ChildText",
    "SpaceError",
    "SpaceIncomplete",
    "SpaceNotFound",
    "SpaceStateError",
    "count_missing",
    "count_progress",
    "create_space",
    "get_space",
    "list_spaces",
    "live_space",
    "missing_children",
    "partition_name",
    "promote",
    "record_event",
    "retire",
    "rollback_target",
    "upsert_vectors",
    "write_space_vectors",
]

# "rlspace" in ASCII: one key for the whole install (per-install live space, ADR 0012)
SPACES_LOCK = int.from_bytes(b"rlspace", "big")

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")

SPACE_VECTORS_WRITTEN = Counter(
    "ragline_space_vectors_written_total",
    "Vectors written to a non-primary embedding space",
    ["space", "by"],
)
SPACE_VECTORS_MISSING = Counter(
    "ragline_space_vectors_missing_total",
    "Child chunks the indexer could not write to an active space (no vector cached yet); "
    "`ragline embeddings backfill` fills them",
    ["space"],
)

_COLS = (
    "space_id",
    "name",
    "model",
    "revision",
    "dim",
    "truncate_dim",
    "normalize",
    "recipe",
    "storage",
    "state",
    "created_at",
    "promoted_at",
)
_SELECT = rendered(
    sql.SQL("SELECT {cols} FROM embedding_spaces").format(
        cols=sql.SQL(", ").join(sql.Identifier(c) for c in _COLS)
    )
)


class SpaceError(RaglineError):
    """An embedding-space operation is not possible in the current state."""


class SpaceNotFound(SpaceError):
    pass


class SpaceStateError(SpaceError):
    pass


class SpaceIncomplete(SpaceError):
    def __init__(self, name: str, missing: int) -> None:
        super().__init__(
            f"space {name!r} lacks vectors for {missing} child chunk(s): run "
            "`ragline embeddings backfill` first (or --force)"
        )
        self.missing = missing


@dataclass(frozen=True, kw_only=True)
class ChildText:
    tenant_id: str
    chunk_id: str
    contextual_header: str | None
    text: str
    embedding: NDArray[np.float32] | None
    embedding_model: str | None
    embedding_revision: str | None


def _vec(value: object) -> NDArray[np.float32]:
    # pgvector hands back numpy for vector(n) or a Vector (to_numpy) for plain `vector`
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if callable(to_numpy) else value, dtype=np.float32)


def partition_name(space_id: int) -> str:
    return f"space_vectors_s{int(space_id)}"


def _space(row: Mapping[str, Any]) -> Space:
    return Space(**{c: row[c] for c in _COLS})


_LOCKS = {
    exclusive: rendered(sql.SQL("SELECT {fn}(%s)").format(fn=sql.Identifier(fn)))
    for exclusive, fn in ((True, "pg_advisory_xact_lock"), (False, "pg_advisory_xact_lock_shared"))
}


async def _lock(conn: AsyncConnection, *, exclusive: bool) -> None:
    await conn.execute(_LOCKS[exclusive], (SPACES_LOCK,))


async def list_spaces(conn: AsyncConnection, *, include_retired: bool = True) -> list[Space]:
    q = _SELECT + sql.SQL(
        " ORDER BY space_id" if include_retired else " WHERE state <> 'retired' ORDER BY space_id"
    )
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(q)
        return [_space(r) for r in await cur.fetchall()]


async def get_space(conn: AsyncConnection, name: str, *, for_update: bool = False) -> Space:
    q = _SELECT + sql.SQL(" WHERE name = %s") + sql.SQL(" FOR UPDATE" if for_update else "")
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(q, (name,))
        row = await cur.fetchone()
    if row is None:
        raise SpaceNotFound(f"no embedding space named {name!r}")
    return _space(row)


async def live_space(conn: AsyncConnection, *, for_update: bool = False) -> Space:
    q = _SELECT + sql.SQL(" WHERE state = 'live'") + sql.SQL(" FOR UPDATE" if for_update else "")
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(q)
        row = await cur.fetchone()
    if row is None:  # the partial unique index allows none only mid-migration
        raise SpaceStateError("no live embedding space (run `ragline migrate`)")
    return _space(row)


async def record_event(
    conn: AsyncConnection,
    action: str,
    space_id: int,
    *,
    actor: str,
    from_space_id: int | None = None,
    forced: bool = False,
    reason: str | None = None,
    evidence: Mapping[str, Any] | None = None,
) -> None:
    with pg_errors():
        await conn.execute(
            "INSERT INTO embedding_space_events"
            " (action, space_id, from_space_id, actor, forced, reason, evidence)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                action,
                space_id,
                from_space_id,
                actor,
                forced,
                reason,
                Jsonb(dict(evidence)) if evidence is not None else None,
            ),
        )


async def create_space(
    conn: AsyncConnection,
    *,
    name: str,
    model: str,
    revision: str,
    dim: int,
    truncate_dim: int | None,
    normalize: bool,
    recipe: str,
    actor: str,
) -> Space:
    """A shadow space, its partition and its HNSW index (cosine), in one transaction.
    Needs the schema owner (DDL), like ``ragline migrate``."""
    recipe_text(recipe, None, "")  # validates the recipe name
    if not _NAME_RE.fullmatch(name):
        raise ConfigError(f"space name {name!r}: lower-case letters, digits, '-' and '_'")
    async with conn.transaction():
        await _lock(conn, exclusive=True)
        if any(s.name == name for s in await list_spaces(conn)):
            raise SpaceStateError(f"a space named {name!r} exists (retired names stay taken)")
        with pg_errors():
            cur = await conn.execute(
                "INSERT INTO embedding_spaces"
                " (name, model, revision, dim, truncate_dim, normalize, recipe, storage, state)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, 'space_vectors', 'shadow')"
                " RETURNING space_id",
                (name, model, revision, dim, truncate_dim, normalize, recipe),
            )
            row = await cur.fetchone()
            assert row is not None
            space_id = int(row[0])
            part = sql.Identifier(partition_name(space_id))
            await conn.execute(
                sql.SQL(
                    "CREATE TABLE {part} PARTITION OF space_vectors FOR VALUES IN ({id})"
                ).format(part=part, id=sql.Literal(space_id))
            )
            await conn.execute(
                sql.SQL(
                    "CREATE INDEX {idx} ON {part} USING hnsw"
                    " ((embedding::vector({dim})) vector_cosine_ops)"
                ).format(
                    idx=sql.Identifier(f"{partition_name(space_id)}_hnsw"),
                    part=part,
                    dim=sql.Literal(int(dim)),
                )
            )
        await record_event(
            conn,
            "create",
            space_id,
            actor=actor,
            evidence={
                "model": model,
                "revision": revision,
                "dim": dim,
                "truncate_dim": truncate_dim,
                "normalize": normalize,
                "recipe": recipe,
            },
        )
        return await get_space(conn, name)


# ---------------------------------------------------------------------------- backfill
async def missing_children(
    conn: AsyncConnection,
    space: Space,
    *,
    after: tuple[str, str] | None,
    limit: int,
) -> list[ChildText]:
    """Child chunks without a vector in ``space``, in key order after ``after``. Chunks
    already done are never returned (resume after a crash re-embeds nothing done)."""
    q = sql.SQL(
        "SELECT c.tenant_id, c.chunk_id, c.contextual_header, c.text, c.embedding,"
        " c.embedding_model, c.embedding_revision FROM chunks c"
        " WHERE c.level = 'child' AND (c.tenant_id, c.chunk_id) > (%s, %s)"
        " AND NOT EXISTS (SELECT 1 FROM space_vectors v WHERE v.space_id = %s"
        "   AND v.tenant_id = c.tenant_id AND v.chunk_id = c.chunk_id)"
        " ORDER BY c.tenant_id, c.chunk_id LIMIT %s"
    )
    start = after or ("", "")
    with pg_errors():
        cur = await conn.execute(q, (start[0], start[1], space.space_id, limit))
        rows = await cur.fetchall()
    return [
        ChildText(
            tenant_id=r[0],
            chunk_id=r[1],
            contextual_header=r[2],
            text=r[3],
            embedding=_vec(r[4]) if r[4] is not None else None,
            embedding_model=r[5],
            embedding_revision=r[6],
        )
        for r in rows
    ]


async def count_progress(conn: AsyncConnection, space: Space) -> tuple[int, int]:
    """(child chunks with a vector in the space, child chunks in total)."""
    with pg_errors():
        cur = await conn.execute("SELECT count(*) FROM chunks WHERE level = 'child'")
        total = int((await cur.fetchone() or (0,))[0])
        if space.is_primary:
            cur = await conn.execute(
                "SELECT count(*) FROM chunks WHERE level = 'child' AND embedding IS NOT NULL"
            )
        else:
            cur = await conn.execute(
                "SELECT count(*) FROM space_vectors v JOIN chunks c"
                " ON c.tenant_id = v.tenant_id AND c.chunk_id = v.chunk_id"
                " WHERE v.space_id = %s AND c.level = 'child'",
                (space.space_id,),
            )
        done = int((await cur.fetchone() or (0,))[0])
    return done, total


async def upsert_vectors(
    conn: AsyncConnection,
    space: Space,
    items: Sequence[tuple[str, str, str, NDArray[np.float32]]],
    *,
    overwrite: bool,
) -> None:
    """Write (tenant, chunk, text hash, vector) rows of ``space``; a chunk deleted in the
    meantime is skipped (the row is only written while its chunk exists). ``overwrite``:
    replace a vector computed from another text (the indexer's write wins)."""
    if not items:
        return
    conflict = (
        " ON CONFLICT (space_id, tenant_id, chunk_id) DO UPDATE"
        " SET text_hash = EXCLUDED.text_hash, embedding = EXCLUDED.embedding"
        " WHERE space_vectors.text_hash <> EXCLUDED.text_hash"
        if overwrite
        else " ON CONFLICT (space_id, tenant_id, chunk_id) DO NOTHING"
    )
    q = sql.SQL(
        "INSERT INTO space_vectors (space_id, tenant_id, chunk_id, text_hash, embedding)"
        " SELECT %s::integer, c.tenant_id, c.chunk_id, %s::text, %s::vector FROM chunks c"
        " WHERE c.tenant_id = %s AND c.chunk_id = %s"
    ) + sql.SQL(conflict)
    params = [(space.space_id, h, v, t, c) for t, c, h, v in items]
    with pg_errors():
        async with conn.cursor() as cur:
            await cur.executemany(q, params)


async def active_secondary(conn: AsyncConnection) -> list[Space]:
    """The non-primary spaces that must be written (shadow and live), under the shared
    spaces lock (held until the caller's transaction ends)."""
    await _lock(conn, exclusive=False)
    return [s for s in await list_spaces(conn, include_retired=False) if not s.is_primary]


async def write_space_vectors(conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> int:
    """The dual write, inside the indexer's transaction: every child row of ``rows`` into
    every active non-primary space. The vector is derived from the row's own (event)
    vector when the space embeds the same text with the same model (a truncated space),
    else read from the embedding cache (the embedder put it there, ``SpaceFeeder``).
    A vector not found is counted and left for ``ragline embeddings backfill``; the
    promote refuses an incomplete space. Returns the number of vectors written."""
    spaces = await active_secondary(conn)
    children = [r for r in rows if r.get("level") == "child"]
    if not spaces or not children:
        return 0
    written = 0
    for space in spaces:
        items: list[tuple[str, str, str, NDArray[np.float32]]] = []
        want: dict[str, list[Mapping[str, Any]]] = {}
        full: dict[str, NDArray[np.float32]] = {}
        model = revision = ""
        for r in children:
            model, revision = space.model_key(
                str(r.get("embedding_model") or ""), str(r.get("embedding_revision") or "")
            )
            text = recipe_text(space.recipe, r.get("contextual_header"), str(r["text"]))
            h = text_key(text)
            own = r.get("embedding")
            same = (r.get("embedding_model"), r.get("embedding_revision")) == (model, revision)
            if space.recipe == "header" and same and own is not None:
                full[h] = np.asarray(own, dtype=np.float32)
            want.setdefault(h, []).append(r)
        lookup = sorted(h for h in want if h not in full)
        if lookup:
            full.update(await get_cached(conn, model=model, revision=revision, text_hashes=lookup))
        found = sorted(h for h in want if h in full)
        if found:
            vecs = transform(
                [full[h] for h in found], space.truncate_dim, normalize=space.normalize
            )
            for h, v in zip(found, vecs, strict=True):
                if v.shape != (space.dim,):
                    continue
                items.extend((str(r["tenant_id"]), str(r["chunk_id"]), h, v) for r in want[h])
        missing = sum(len(want[h]) for h in want if h not in full)
        if missing:
            SPACE_VECTORS_MISSING.labels(space.name).inc(missing)
        await upsert_vectors(conn, space, items, overwrite=True)
        SPACE_VECTORS_WRITTEN.labels(space.name, "indexer").inc(len(items))
        written += len(items)
    return written


# ---------------------------------------------------------------------------- the flip
async def count_missing(conn: AsyncConnection, space: Space) -> int:
    if space.is_primary:
        q = "SELECT count(*) FROM chunks c WHERE c.level = 'child' AND c.embedding IS NULL"
        args: tuple[Any, ...] = ()
    else:
        q = (
            "SELECT count(*) FROM chunks c WHERE c.level = 'child' AND NOT EXISTS"
            " (SELECT 1 FROM space_vectors v WHERE v.space_id = %s"
            "  AND v.tenant_id = c.tenant_id AND v.chunk_id = c.chunk_id)"
        )
        args = (space.space_id,)
    with pg_errors():
        cur = await conn.execute(q, args)
        return int((await cur.fetchone() or (0,))[0])


async def promote(
    conn: AsyncConnection,
    name: str,
    *,
    actor: str,
    action: str = "promote",
    forced: bool = False,
    reason: str | None = None,
    evidence: Mapping[str, Any] | None = None,
    expect_live: int | None = None,
) -> tuple[Space, Space]:
    """Make ``name`` the live space in one transaction (the old live space becomes a
    shadow: still written, so ``rollback`` is instant). Refuses an incomplete space unless
    ``forced``, and a live space other than ``expect_live`` (someone flipped meanwhile).
    Returns (old live, new live)."""
    async with conn.transaction():
        await _lock(conn, exclusive=True)
        target = await get_space(conn, name, for_update=True)
        old = await live_space(conn, for_update=True)
        if target.state != "shadow":
            raise SpaceStateError(f"space {name!r} is {target.state}, not shadow")
        if expect_live is not None and old.space_id != expect_live:
            raise SpaceStateError(
                f"the live space changed to {old.name!r} while the gate ran: run it again"
            )
        missing = await count_missing(conn, target)
        if missing and not forced:
            raise SpaceIncomplete(name, missing)
        with pg_errors():
            await conn.execute(
                "UPDATE embedding_spaces SET state = 'shadow' WHERE space_id = %s",
                (old.space_id,),
            )
            await conn.execute(
                "UPDATE embedding_spaces SET state = 'live', promoted_at = now()"
                " WHERE space_id = %s",
                (target.space_id,),
            )
        ev = dict(evidence or {})
        ev["missing_vectors"] = missing
        await record_event(
            conn,
            action,
            target.space_id,
            actor=actor,
            from_space_id=old.space_id,
            forced=forced,
            reason=reason,
            evidence=ev,
        )
        return old, await get_space(conn, name)


async def rollback_target(conn: AsyncConnection) -> Space:
    """The space the last promote (or rollback) flipped away from."""
    with pg_errors():
        cur = await conn.execute(
            "SELECT e.from_space_id FROM embedding_space_events e"
            " JOIN embedding_spaces s ON s.space_id = e.space_id AND s.state = 'live'"
            " WHERE e.action IN ('promote', 'rollback') ORDER BY e.event_id DESC LIMIT 1"
        )
        row = await cur.fetchone()
        if row is None or row[0] is None:
            raise SpaceStateError("nothing to roll back: the live space was never promoted")
        cur = await conn.execute(
            sql.SQL("SELECT name FROM embedding_spaces WHERE space_id = %s"), (row[0],)
        )
        name = await cur.fetchone()
    if name is None:
        raise SpaceStateError("the previous live space no longer exists")
    return await get_space(conn, str(name[0]))


async def retire(conn: AsyncConnection, name: str, *, actor: str, reason: str | None) -> Space:
    """Stop writing a non-live space and drop its vectors (its partition and index). The
    primary space keeps its column (the event path writes it; ADR 0012)."""
    async with conn.transaction():
        await _lock(conn, exclusive=True)
        space = await get_space(conn, name, for_update=True)
        if space.state == "live":
            raise SpaceStateError(f"space {name!r} is live: promote another one first")
        if space.state == "retired":
            return space
        with pg_errors():
            await conn.execute(
                "UPDATE embedding_spaces SET state = 'retired', retired_at = now()"
                " WHERE space_id = %s",
                (space.space_id,),
            )
            if not space.is_primary:
                await conn.execute("SET LOCAL lock_timeout = '10s'")
                await conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {}").format(
                        sql.Identifier(partition_name(space.space_id))
                    )
                )
        await record_event(conn, "retire", space.space_id, actor=actor, reason=reason)
        return await get_space(conn, name)
