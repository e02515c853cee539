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
from typing import ClassVar, Never

from psycopg_pool import AsyncConnectionPool

from ragline.cache.invalidation import InvalidationPlan, apply_plans, plan_invalidation
from ragline.cache.metrics import EVICTIONS, INVALIDATION_LAG, INVALIDATIONS
from ragline.cache.settings import CacheSettings
from ragline.cache.sweeper import Sweeper
from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.events import DocIndexed, Topics
from ragline.runtime.stage import BatchConfig, Results, Stage, StageContext
from ragline.store.pool import open_pool

__all__ = ["CacheInvalidatorStage"]


class CacheInvalidatorStage(Stage[DocIndexed, Never]):
    name = "cache_invalidator"
    input_topics = (Topics.DOC_INDEXED.value,)
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=128, linger_ms=20)

    def __init__(self, settings: Settings, cache_settings: CacheSettings) -> None:
        super().__init__(settings)
        self.cache_settings = cache_settings
        self._pool: AsyncConnectionPool | None = None
        self._sweeper: Sweeper | None = None

    async def open(self) -> None:
        self._pool = await open_pool(self.settings.admin_dsn(), name="cache-invalidator")
        self._sweeper = Sweeper(
            self._pool,
            interval_s=self.cache_settings.sweep_interval_s,
            max_entries_per_tenant=self.cache_settings.max_entries_per_tenant,
        )
        self._sweeper.start()

    async def close(self) -> None:
        if self._sweeper is not None:
            await self._sweeper.stop()
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def process_batch(
        self, events: Sequence[DocIndexed], ctx: StageContext
    ) -> Results[Never]:
        """One transaction (one WAL flush) per batch: a backlog after a bulk ingest drains
        fast, and the fence stops refusing stores as soon as it has."""
        assert self._pool is not None, "start() not called"
        plans: list[tuple[DocIndexed, InvalidationPlan]] = []
        for ev in events:
            plan = plan_invalidation(ev, freshness=self.cache_settings.freshness)
            if plan is None:
                INVALIDATIONS.labels(ev.action.value, "skipped").inc()
            else:
                plans.append((ev, plan))
        t0 = time.perf_counter()
        try:
            async with self._pool.connection() as conn:
                counts = await apply_plans(conn, [p for _, p in plans])
        except RaglineError as exc:  # the runtime retries or dead-letters each event
            return [exc] * len(events)
        now = datetime.now(UTC)
        for (ev, plan), evicted in zip(plans, counts, strict=True):
            EVICTIONS.labels(plan.reason).inc(evicted)
            INVALIDATIONS.labels(ev.action.value, "applied").inc()
            if ev.source_event_at is not None:
                INVALIDATION_LAG.observe(max((now - ev.source_event_at).total_seconds(), 0.0))
        if plans:
            ctx.logger.debug(
                "cache invalidated",
                extra={
                    "fields": {
                        "events": len(plans),
                        "evicted": sum(counts),
                        "ms": round((time.perf_counter() - t0) * 1000, 2),
                    }
                },
            )
        return [()] * len(events)
