"""SQL of the query side of the cache, run as the RLS-bound query role inside the
principal's scope (``rls_transaction``): find a candidate entry, check it is still fresh,
count the hit, store a new entry behind the invalidation fence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from psycopg import AsyncConnection, sql

from ragline.cache.codec import EncodedResponse
from ragline.cache.keys import EntryKey
from ragline.cache.settings import Freshness
from ragline.store.pg_errors import pg_errors

__all__ = ["LOCK_CLASS", "Candidate", "find_candidate", "insert_entry"]

# advisory lock class of the cache (first key); the second key is hashtext(tenant_id)
LOCK_CLASS = 7_000_007


@dataclass(frozen=True, kw_only=True)
class Candidate:
    now: datetime  # the DB clock when the lookup ran: the snapshot time of a miss's store
    entry_id: int | None = None
    blob: bytes | None = None
    similarity: float | None = None
    fresh: bool = False


_MATCH_EXACT = sql.SQL("e.query_hash = %(q)s")
_MATCH_SEMANTIC = sql.SQL(
    "(e.query_hash = %(q)s OR (e.embedding IS NOT NULL"
    " AND vector_dims(e.embedding) = %(dim)s AND (e.embedding <=> %(v)s) <= %(maxd)s))"
)
_ORDER_EXACT = sql.SQL("e.entry_id DESC")
_ORDER_SEMANTIC = sql.SQL("(e.query_hash = %(q)s) DESC, e.embedding <=> %(v)s")
_SIM_EXACT = sql.SQL("1.0::float8")
_SIM_SEMANTIC = sql.SQL("1 - (e.embedding <=> %(v)s)")
# strict: nothing the scope can see changed since the entry's search began
_STRICT = sql.SQL(
    " AND coalesce((SELECT max(d.updated_at) FROM documents d"
    " WHERE d.tenant_id = %(t)s), '-infinity') < c.built_at"
)

# One round trip: the best candidate, its freshness check, and (only when fresh) the hit
# counters, committed without waiting for the WAL flush (a lost counter after a crash is
# harmless; a synchronous flush would dominate a hit's latency).
_LOOKUP = sql.SQL(
    """WITH c AS (
    SELECT e.entry_id, e.response, e.chunk_ids, e.built_at, {sim} AS sim
    FROM answer_cache e
    WHERE e.tenant_id = %(t)s AND e.scope_hash = %(s)s AND e.request_hash = %(r)s
      AND e.index_version = %(iv)s AND e.guard_hash = %(g)s AND e.expires_at > now()
      AND {match}
    ORDER BY {order}
    LIMIT 1
), f AS (
    SELECT c.entry_id, c.response, c.sim,
           ((SELECT count(*) FROM chunks k
             WHERE k.tenant_id = %(t)s AND k.chunk_id = ANY(c.chunk_ids))
            = cardinality(c.chunk_ids){strict}) AS fresh
    FROM c
), hit AS (
    UPDATE answer_cache e SET hits = e.hits + 1, last_hit_at = now()
    FROM f
    WHERE e.entry_id = f.entry_id AND f.fresh
      AND set_config('synchronous_commit', 'off', true) IS NOT NULL
    RETURNING e.entry_id
)
SELECT n.now, f.entry_id, f.response, f.sim, coalesce(f.fresh, false),
       (SELECT count(*) FROM hit) AS counted
FROM (SELECT clock_timestamp() AS now) n LEFT JOIN f ON true"""
)


async def find_candidate(
    conn: AsyncConnection, key: EntryKey, *, threshold: float, freshness: Freshness
) -> Candidate:
    """The best live entry for ``key`` and whether it passed the freshness check (a fresh
    one has its hit counted in the same statement).

    Fresh means every cited chunk still exists and is visible to this scope (catches
    deletes, content updates and revocations of the entry's own documents) and, in
    strict mode, no document visible to the scope changed after the entry's search began.
    """
    semantic = key.vector is not None
    query = _LOOKUP.format(
        sim=_SIM_SEMANTIC if semantic else _SIM_EXACT,
        match=_MATCH_SEMANTIC if semantic else _MATCH_EXACT,
        order=_ORDER_SEMANTIC if semantic else _ORDER_EXACT,
        strict=_STRICT if freshness == "strict" else sql.SQL(""),
    )
    params: dict[str, object] = {
        "t": key.tenant_id,
        "s": key.scope_hash,
        "r": key.request_hash,
        "iv": key.index_version,
        "g": key.guard_hash,
        "q": key.query_hash,
    }
    if key.vector is not None:
        params.update(v=key.vector, dim=int(key.vector.shape[0]), maxd=1.0 - threshold)
    with pg_errors():
        cur = await conn.execute(query, params)
        row = await cur.fetchone()
    assert row is not None  # the FROM clause always yields one row
    now, entry_id, blob, sim, fresh, _counted = row
    if entry_id is None:
        return Candidate(now=now)
    return Candidate(
        now=now, entry_id=int(entry_id), blob=bytes(blob), similarity=float(sim), fresh=bool(fresh)
    )


_ASYNC_COMMIT = "SELECT set_config('synchronous_commit', 'off', true)"


_INSERT = sql.SQL(
    """INSERT INTO answer_cache (tenant_id, groups, scope_hash, request_hash, index_version,
    guard_hash, query_hash, mode, embedding, response, size_bytes, document_ids, chunk_ids,
    built_at, expires_at)
SELECT %(t)s, %(groups)s, %(s)s, %(r)s, %(iv)s, %(g)s, %(q)s, %(mode)s, %(v)s, %(blob)s,
       %(size)s, %(docs)s, %(chunks)s, %(built)s, now() + make_interval(secs => %(ttl)s)
WHERE NOT EXISTS (
    SELECT 1 FROM answer_cache_fence f
    WHERE f.tenant_id = %(t)s AND (f.group_name = ANY(%(groups)s) OR f.group_name = '*')
      AND f.fenced_at >= %(built)s)
ON CONFLICT ON CONSTRAINT answer_cache_key DO UPDATE SET
    mode = EXCLUDED.mode, embedding = EXCLUDED.embedding, response = EXCLUDED.response,
    size_bytes = EXCLUDED.size_bytes, document_ids = EXCLUDED.document_ids,
    chunk_ids = EXCLUDED.chunk_ids, built_at = EXCLUDED.built_at,
    created_at = now(), expires_at = EXCLUDED.expires_at
WHERE answer_cache.built_at < EXCLUDED.built_at
RETURNING entry_id"""
)


async def insert_entry(
    conn: AsyncConnection,
    key: EntryKey,
    encoded: EncodedResponse,
    *,
    built_at: datetime,
    ttl_s: float,
) -> bool:
    """Store the entry unless an invalidation touching this scope ran after ``built_at``.

    The shared advisory lock pairs with the invalidator's exclusive one: either the
    fence is visible to this insert, or the insert is visible to the eviction after it.
    Returns whether a row was written. Committed without waiting for the WAL flush: an
    entry lost in a crash is only a future miss.
    """
    with pg_errors():
        await conn.execute(_ASYNC_COMMIT)
        await conn.execute(
            "SELECT pg_advisory_xact_lock_shared(%s, hashtext(%s))", (LOCK_CLASS, key.tenant_id)
        )
        cur = await conn.execute(
            _INSERT,
            {
                "t": key.tenant_id,
                "groups": list(key.groups),
                "s": key.scope_hash,
                "r": key.request_hash,
                "iv": key.index_version,
                "g": key.guard_hash,
                "q": key.query_hash,
                "mode": key.mode,
                "v": key.vector,
                "blob": encoded.blob,
                "size": len(encoded.blob),
                "docs": list(encoded.document_ids),
                "chunks": list(encoded.chunk_ids),
                "built": built_at,
                "ttl": ttl_s,
            },
        )
        return await cur.fetchone() is not None
