"""Dense retrieval: pgvector HNSW (cosine) under row-level security.

Filters are part of the same query, so with a plain HNSW scan a selective filter (a
small group, one version) could leave fewer than ``limit`` rows. pgvector's iterative
index scan (``hnsw.iterative_scan = relaxed_order``) keeps scanning the graph until the
filtered result is full (bounded by ``hnsw.max_scan_tuples``); relaxed order means rows
may come slightly out of order, so they are re-sorted by distance here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import AsyncConnection, sql

from ragline.auth.principal import Principal
from ragline.retrieval.filters import Predicate, to_sql
from ragline.store.pg_errors import pg_errors
from ragline.store.space_model import Space

__all__ = ["DenseHit", "dense_query", "dense_search"]


@dataclass(frozen=True, kw_only=True)
class DenseHit:
    chunk_id: str
    similarity: float  # cosine similarity, 1 - cosine distance
    rank: int


def dense_query(
    principal: Principal,
    vector: npt.NDArray[np.float32],
    preds: Sequence[Predicate],
    *,
    limit: int,
    space: Space | None = None,
) -> tuple[sql.Composed, list[Any]]:
    """The dense leg's SQL and arguments: ``chunks.embedding`` for the primary space,
    else the space's partition (its id a literal, so the planner prunes to it and uses
    its HNSW index) joined to the chunk row, which carries the filters (ADR 0013)."""
    where, params = to_sql(preds, "c")
    if space is None or space.is_primary:
        query = sql.SQL(
            "SELECT c.chunk_id, c.embedding <=> %s AS distance FROM chunks c"
            " WHERE c.tenant_id = %s AND c.level = 'child' AND c.embedding IS NOT NULL"
            " AND {where} ORDER BY c.embedding <=> %s LIMIT %s"
        ).format(where=where)
        return query, [vector, principal.tenant, *params, vector, limit]
    vec = sql.SQL("(v.embedding::vector({dim}))").format(dim=sql.Literal(space.dim))
    query = sql.SQL(
        "SELECT c.chunk_id, {vec} <=> %s AS distance FROM space_vectors v"
        " JOIN chunks c ON c.tenant_id = v.tenant_id AND c.chunk_id = v.chunk_id"
        " WHERE v.space_id = {sid} AND v.tenant_id = %s AND c.level = 'child'"
        " AND {where} ORDER BY {vec} <=> %s LIMIT %s"
    ).format(vec=vec, sid=sql.Literal(space.space_id), where=where)
    return query, [vector, principal.tenant, *params, vector, limit]


async def dense_search(
    conn: AsyncConnection,
    principal: Principal,
    vector: npt.NDArray[np.float32],
    preds: Sequence[Predicate],
    *,
    limit: int,
    ef_search: int = 100,
    max_scan_tuples: int = 20_000,
    space: Space | None = None,
) -> list[DenseHit]:
    """Top ``limit`` child chunks by cosine similarity. ``conn`` must be inside
    ``rls_transaction`` for ``principal`` (the tenant predicate here is only a second lock
    on the same door)."""
    query, args = dense_query(principal, vector, preds, limit=limit, space=space)
    with pg_errors():
        await conn.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
            " set_config('hnsw.ef_search', %s, true),"
            " set_config('hnsw.max_scan_tuples', %s, true)",
            (str(max(ef_search, limit)), str(max_scan_tuples)),
        )
        cur = await conn.execute(query, args)
        rows = await cur.fetchall()
    ordered = sorted(((float(d), str(cid)) for cid, d in rows), key=lambda r: (r[0], r[1]))
    return [
        DenseHit(chunk_id=cid, similarity=1.0 - dist, rank=i)
        for i, (dist, cid) in enumerate(ordered, start=1)
    ]
