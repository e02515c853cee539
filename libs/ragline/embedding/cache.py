"""The embedding cache behind a small interface: Postgres in services, a dict in tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from psycopg_pool import AsyncConnectionPool

from ragline.store.embedding_cache import put_cached
from ragline.store.pg_errors import pg_errors

__all__ = ["TOUCH_AFTER", "MemoryVectorCache", "PgVectorCache", "VectorCache"]

Vector = NDArray[np.float32]

# `last_used_at` (0008) is refreshed on a hit only when older than this: `ragline gc`
# needs day precision, and a write per hit would double the cost of a warm cache. The
# read says which hits are stale, so a warm cache pays no second round trip.
TOUCH_AFTER = timedelta(days=1)

_GET = (
    "SELECT text_hash, embedding, last_used_at < now() - %s FROM embedding_cache"
    " WHERE model = %s AND revision = %s AND text_hash = ANY(%s)"
)
# SKIP LOCKED: two embedders touching overlapping rows never wait on (or deadlock with)
# each other; a row one of them skips is being touched by the other anyway
_TOUCH = (
    "UPDATE embedding_cache SET last_used_at = now()"
    " WHERE (model, revision, text_hash) IN ("
    "  SELECT model, revision, text_hash FROM embedding_cache"
    "  WHERE model = %s AND revision = %s AND text_hash = ANY(%s)"
    "  FOR UPDATE SKIP LOCKED)"
)


def _array(value: object) -> Vector:
    # pgvector hands back a Vector for the unconstrained `vector` column
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if callable(to_numpy) else value, dtype=np.float32)


class VectorCache(Protocol):
    async def get(self, keys: Sequence[str]) -> dict[str, Vector]: ...

    async def put(self, vectors: Mapping[str, Vector]) -> None: ...


class PgVectorCache:
    """Cache rows keyed by (model, revision, text hash) in ``embedding_cache``."""

    def __init__(self, pool: AsyncConnectionPool, *, model: str, revision: str) -> None:
        self.pool = pool
        self.model = model
        self.revision = revision

    async def get(self, keys: Sequence[str]) -> dict[str, Vector]:
        with pg_errors():
            async with self.pool.connection() as conn:
                if not keys:
                    return {}
                cur = await conn.execute(
                    _GET, (TOUCH_AFTER, self.model, self.revision, sorted(set(keys)))
                )
                rows = await cur.fetchall()
                stale = sorted(str(h) for h, _, old in rows if old)
                if stale:
                    await conn.execute(_TOUCH, (self.model, self.revision, stale))
                return {str(h): _array(v) for h, v, _ in rows}

    async def put(self, vectors: Mapping[str, Vector]) -> None:
        with pg_errors():
            async with self.pool.connection() as conn, conn.transaction():
                await put_cached(conn, model=self.model, revision=self.revision, vectors=vectors)


class MemoryVectorCache:
    """In-process cache (tests, benchmarks of the model alone)."""

    def __init__(self) -> None:
        self.data: dict[str, Vector] = {}

    async def get(self, keys: Sequence[str]) -> dict[str, Vector]:
        return {k: self.data[k] for k in keys if k in self.data}

    async def put(self, vectors: Mapping[str, Vector]) -> None:
        self.data.update(vectors)
