"""The cache invalidator as a real ``ragline run cache_invalidator`` process: doc.indexed
from Kafka -> eviction in Postgres, lag and eviction metrics on its /metrics."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from cache_seed import cache_key, response
from psycopg_pool import AsyncConnectionPool

from ragline.cache.result_cache import PgResultCache
from ragline.cache.settings import CacheSettings
from ragline.cache.sweeper import count_entries
from ragline.config import Settings
from ragline.events import DocIndexed, IndexAction, Topics
from ragline.runtime.publisher import EventPublisher

pytestmark = pytest.mark.integration


def sample(metrics: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", metrics, re.MULTILINE)
    return float(m.group(1)) if m else 0.0


async def test_invalidator_process_evicts_from_kafka_events(
    stack: Settings,
    service_process: Any,
    query_pool: AsyncConnectionPool,
    admin_pool: AsyncConnectionPool,
    tenant: str,
) -> None:
    proc = service_process("cache_invalidator", env={"RAGLINE_CACHE_FRESHNESS": "dependents"})
    await proc.wait_metrics_async(timeout_s=120)
    c = PgResultCache(query_pool, CacheSettings(freshness="dependents"), index_version="v")
    for doc in ("kb:gone", "kb:stays"):
        k = cache_key(tenant, ["eng"], f"about {doc}")
        assert await c.lookup(k) is None
        await c.store(k, response([(doc, f"{doc}#1")]))

    ev = DocIndexed(
        tenant_id=tenant,
        document_id="kb:gone",
        source_seq=2,
        action=IndexAction.DELETE,
        generation=2,
        chunk_count=0,
        acl_groups_before=("eng",),
        source_event_at=datetime.now(UTC),
    )
    t0 = time.monotonic()
    async with EventPublisher(stack) as pub:
        await pub.publish(Topics.DOC_INDEXED, ev)
    deadline = time.monotonic() + 60
    while True:
        async with admin_pool.connection() as conn:
            left = await count_entries(conn, tenant)
        if left == 1:
            break
        assert time.monotonic() < deadline, proc.log()[-3000:]
        await asyncio.sleep(0.1)
    elapsed = time.monotonic() - t0
    async with admin_pool.connection() as conn:
        cur = await conn.execute(
            "SELECT document_ids FROM answer_cache WHERE tenant_id = %s", (tenant,)
        )
        assert await cur.fetchall() == [(["kb:stays"],)]
        await conn.commit()
    metrics = proc.metrics()
    assert sample(metrics, "ragline_cache_invalidation_lag_seconds_count") >= 1
    assert sample(metrics, 'ragline_cache_evictions_total{reason="delete"}') >= 1
    assert elapsed < 30
