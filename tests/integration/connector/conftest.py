"""Helpers for connector integration tests: read a topic from the real broker, filtered
to one tenant (tests share one stack and tell their events apart by tenant id). A
logical topic is read in both priority lanes (docs/lanes.md): ``ragline sync`` and a
first watch poll publish in the bulk lane, edits in the interactive one; a test that
cares which lane asserts the events' ``priority``."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from ragline.config import Settings
from ragline.events import BULK, lane_topic

Collector = Callable[..., Any]


async def collect(
    settings: Settings,
    topic: str,
    tenant: str,
    *,
    count: int,
    timeout_s: float = 30.0,
    settle_s: float = 0.0,
) -> list[dict[str, Any]]:
    """The first ``count`` events of ``tenant`` on ``topic``, either lane (from the
    beginning), then anything more that arrives within ``settle_s`` (to prove nothing
    extra was emitted)."""
    consumer = AIOKafkaConsumer(
        *sorted({topic, lane_topic(topic, BULK)}),
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=None,  # no group: all partitions at once, no rebalance wait
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    found: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + timeout_s
        settle_until: float | None = None
        while True:
            now = time.monotonic()
            if settle_until is None and len(found) >= count:
                settle_until = now + settle_s
            if settle_until is not None and now >= settle_until:
                break
            if now > deadline:
                raise AssertionError(f"{topic}: got {len(found)} of {count} events for {tenant}")
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for rec in records:
                    event = json.loads(rec.value)
                    if event.get("tenant_id") == tenant:
                        found.append(event)
    finally:
        await consumer.stop()
    return found


@pytest.fixture
def collector(stack: Settings) -> Collector:
    async def run(topic: str, tenant: str, **kw: Any) -> list[dict[str, Any]]:
        return await collect(stack, topic, tenant, **kw)

    return run


async def wait_for(check: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.2)
