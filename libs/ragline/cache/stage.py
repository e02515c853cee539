"""The cache invalidator: ``doc.indexed`` -> evict the entries that depend on the
document (and the scopes an ACL change affects), observe the invalidation lag, and run
the TTL/size sweeper in the background. It publishes nothing.

Ordering: the indexer emits ``doc.indexed`` only after Postgres and OpenSearch are both
written, so an eviction can never be followed by a refill from the old index; a search
that read the old index and stores late is refused by the fence (invalidation.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from ragline.cache.invalidation import apply_plan, plan_invalidation
from ragline.cache.metrics import EVICTIONS, INVALIDATION_LAG, INVALIDATIONS
from ragline.cache.settings import CacheSettings
from ragline.cache.sweeper import Sweeper
from ragline.events import DocIndexed, Topics
from ragline.runtime.settings import Settings
from ragline.runtime.stage import Output, Stage, StageContext
from ragline.store.pool import open_pool

__all__ = ["CacheInvalidatorStage"]


class CacheInvalidatorStage(Stage):
    name = "cache_invalidator"
    input_topics = (Topics.DOC_INDEXED.value,)

    def __init__(self, settings: Settings, cache_settings: CacheSettings | None = None) -> None:
        super().__init__(settings)
        self.cache_settings = cache_settings or CacheSettings()
        self._pool: AsyncConnectionPool | None = None
        self._sweeper: Sweeper | None = None

    async def start(self) -> None:
        self._pool = await open_pool(self.settings.admin_dsn(), name="cache-invalidator")
        self._sweeper = Sweeper(
            self._pool,
            interval_s=self.cache_settings.sweep_interval_s,
            max_entries_per_tenant=self.cache_settings.max_entries_per_tenant,
        )
        self._sweeper.start()

    async def stop(self) -> None:
        if self._sweeper is not None:
            await self._sweeper.stop()
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def handle(self, event: Any, ctx: StageContext) -> Sequence[Output]:
        assert isinstance(event, DocIndexed)
        assert self._pool is not None, "start() not called"
        plan = plan_invalidation(event, freshness=self.cache_settings.freshness)
        if plan is None:
            INVALIDATIONS.labels(event.action.value, "skipped").inc()
            return ()
        t0 = time.perf_counter()
        async with self._pool.connection() as conn:
            evicted = await apply_plan(conn, plan)
        EVICTIONS.labels(plan.reason).inc(evicted)
        INVALIDATIONS.labels(event.action.value, "applied").inc()
        if event.source_event_at is not None:
            lag = (datetime.now(UTC) - event.source_event_at).total_seconds()
            INVALIDATION_LAG.observe(max(lag, 0.0))
        ctx.logger.debug(
            "cache invalidated",
            extra={
                "fields": {
                    "action": event.action.value,
                    "evicted": evicted,
                    "ms": round((time.perf_counter() - t0) * 1000, 2),
                }
            },
        )
        return ()
