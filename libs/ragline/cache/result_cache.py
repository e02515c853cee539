"""``PgResultCache``: the permission-scoped semantic answer cache behind the query
service's ``ResultCache`` seam (ragline.retrieval.cache_seam).

A lookup runs as the query role inside the principal's RLS scope, so Postgres itself
refuses rows of any other scope. A miss remembers the DB clock at lookup time (before
retrieval begins); the later ``store`` writes the entry only if no invalidation touching
the scope ran since then. A cache failure never fails a search: it is a miss.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Literal

from psycopg_pool import AsyncConnectionPool

from ragline.cache.codec import decode_response, encode_response
from ragline.cache.keys import EntryKey, entry_key
from ragline.cache.metrics import HITS, LOOKUP_SECONDS, MISSES, STORES
from ragline.cache.repository import find_candidate, insert_entry
from ragline.cache.settings import CacheSettings
from ragline.cache.version import configured_index_version
from ragline.config import EmbeddingModelSettings
from ragline.errors import RaglineError
from ragline.retrieval.api_models import SearchResponse
from ragline.retrieval.cache_seam import CacheKey, NoCache, ResultCache
from ragline.retrieval.scope import rls_transaction
from ragline.retrieval.settings import QuerySettings

__all__ = ["PgResultCache", "answer_cache_factory"]

_log = logging.getLogger("ragline.cache")
_MAX_PENDING = 4096


class PgResultCache:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        settings: CacheSettings,
        *,
        index_version: str,
        today: Callable[[], date] = date.today,
    ) -> None:
        self._pool = pool
        self._s = settings
        self._index_version = index_version
        self._today = today
        # id(CacheKey) -> (EntryKey, DB clock of the miss). A reused id can only map to an
        # OLDER snapshot, which makes the fence stricter, never laxer.
        self._pending: OrderedDict[int, tuple[EntryKey, datetime]] = OrderedDict()

    @property
    def state(self) -> Literal["on", "off"]:
        return "on"

    @property
    def index_version(self) -> str:
        return self._index_version

    def _key(self, key: CacheKey) -> EntryKey:
        return entry_key(key, index_version=self._index_version, today=self._today())

    async def lookup(self, key: CacheKey) -> SearchResponse | None:
        ek = self._key(key)
        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(self._s.lookup_timeout_ms / 1000):
                async with rls_transaction(self._pool, key.principal) as conn:
                    cand = await find_candidate(
                        conn,
                        ek,
                        threshold=self._s.similarity_threshold,
                        freshness=self._s.freshness,
                    )
        except (RaglineError, TimeoutError) as exc:
            MISSES.labels(ek.mode, "error").inc()
            _log.warning("cache lookup failed", extra={"fields": {"error": type(exc).__name__}})
            return None
        finally:
            LOOKUP_SECONDS.observe(time.perf_counter() - t0)
        if cand.entry_id is not None and cand.fresh and cand.blob is not None:
            HITS.labels(ek.mode).inc()
            return decode_response(cand.blob)
        MISSES.labels(ek.mode, "stale" if cand.entry_id is not None else "none").inc()
        self._remember(key, ek, cand.now)
        return None

    def _remember(self, key: CacheKey, ek: EntryKey, now: datetime) -> None:
        self._pending[id(key)] = (ek, now)
        self._pending.move_to_end(id(key))
        while len(self._pending) > _MAX_PENDING:
            self._pending.popitem(last=False)

    async def store(self, key: CacheKey, response: SearchResponse) -> None:
        pending = self._pending.pop(id(key), None)
        if pending is None:
            STORES.labels("no_snapshot").inc()
            return
        ek, built_at = pending
        if ek.identity != self._key(key).identity or response.degraded:
            STORES.labels("no_snapshot").inc()
            return
        encoded = encode_response(response)
        if len(encoded.blob) > self._s.max_entry_bytes:
            STORES.labels("too_big").inc()
            return
        try:
            async with rls_transaction(self._pool, key.principal) as conn:
                stored = await insert_entry(
                    conn, ek, encoded, built_at=built_at, ttl_s=self._s.ttl_s
                )
        except RaglineError as exc:
            STORES.labels("error").inc()
            _log.warning("cache store failed", extra={"fields": {"error": type(exc).__name__}})
            return
        STORES.labels("stored" if stored else "fenced").inc()


def answer_cache_factory(
    settings: CacheSettings,
    query_settings: QuerySettings,
    model: EmbeddingModelSettings,
    *,
    model_path: Path | None = None,
) -> Callable[[AsyncConnectionPool], ResultCache]:
    """The query service's ``cache_factory``: called with the query pool in its lifespan.

    The index version is derived from the configured query model (``model_path``, else
    ``RAGLINE_QUERY_EMBEDDING_MODEL_PATH``, else the shared embedding model), the epoch
    and the fingerprint of the ranking settings (``RankingSettings``: RRF k, weights,
    ef_search, abstain thresholds, reranker, ...), so a retuned query service never serves
    answers ranked the old way.
    """
    cs = settings
    qs = query_settings

    def make(pool: AsyncConnectionPool) -> ResultCache:
        if not cs.enabled:
            _log.info("answer cache disabled (RAGLINE_CACHE_ENABLED=false)")
            return NoCache()
        path = model_path if model_path is not None else qs.ranking.embedding_model_path
        version = configured_index_version(path, model, epoch=cs.index_epoch)
        version = f"{version}+r{qs.ranking.fingerprint()}"
        return PgResultCache(pool, cs, index_version=version)

    return make
