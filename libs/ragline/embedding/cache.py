"""The embedding cache behind a small interface: Postgres in services, a dict in tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from psycopg_pool import AsyncConnectionPool

from ragline.store.embedding_cache import get_cached, put_cached
from ragline.store.pg_errors import pg_errors

__all__ = ["MemoryVectorCache", "PgVectorCache", "VectorCache"]

Vector = NDArray[np.float32]


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
                return await get_cached(
                    conn, model=self.model, revision=self.revision, text_hashes=keys
                )

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
