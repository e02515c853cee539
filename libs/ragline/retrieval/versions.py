"""The version labels a principal can see, so a bare number in a query ("Acme Gateway
3.9") counts as a version only when the corpus really has that version.

Read under RLS (a caller never learns of versions it cannot see) and cached briefly per
scope: versions change only when documents are ingested.
"""

from __future__ import annotations

import time

from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.retrieval.scope import rls_transaction

__all__ = ["KnownVersions"]


class KnownVersions:
    def __init__(self, pool: AsyncConnectionPool, *, ttl_s: float = 30.0, max_scopes: int = 4096):
        self._pool = pool
        self._ttl = ttl_s
        self._max = max_scopes
        self._cache: dict[str, tuple[float, frozenset[str]]] = {}

    async def get(self, principal: Principal) -> frozenset[str]:
        key = principal.scope_key
        hit = self._cache.get(key)
        now = time.monotonic()
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        async with rls_transaction(self._pool, principal) as conn:
            cur = await conn.execute(
                "SELECT DISTINCT version FROM documents"
                " WHERE version IS NOT NULL AND status = 'indexed'"
            )
            versions = frozenset(str(r[0]) for r in await cur.fetchall())
        if len(self._cache) >= self._max:
            self._cache.clear()
        self._cache[key] = (now, versions)
        return versions
