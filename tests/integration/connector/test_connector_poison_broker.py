"""Issue 12, defect 4 through the real broker and the connector service process: poison
events on ``source.changes`` (a NUL in the document id, a ``source_seq`` of 2^63 and of
10^30, a NUL in ``meta.title`` and in a metadata value) are dead-lettered one by one with
a value-free reason, and their good neighbours in the same poll are accepted."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer

from ragline.config import Settings
from ragline.events import DeadLetter, Topics, dlq_topic
from ragline.runtime.publisher import EventPublisher

pytestmark = pytest.mark.integration


def _upsert(tenant: str, doc: str, **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "event_type": "source.upsert",
        "tenant_id": tenant,
        "document_id": doc,
        "source_seq": 1,
        "meta": {"acl_groups": ["eng"], "title": "ok", "metadata": {"k": "v"}},
        "content_text": f"text of {doc}",
    }
    body.update(over)
    return body


async def _dead_letters(settings: Settings, keys: set[str], timeout_s: float) -> list[DeadLetter]:
    consumer = AIOKafkaConsumer(
        dlq_topic(Topics.SOURCE_CHANGES.value),
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    found: list[DeadLetter] = []
    try:
        deadline = time.monotonic() + timeout_s
        while len(found) < len(keys) and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=300)).values():
                for rec in records:
                    dl = DeadLetter.model_validate_json(rec.value)
                    if dl.key in keys:
                        found.append(dl)
    finally:
        await consumer.stop()
    return found


async def test_poison_events_are_dead_lettered_alone(
    stack: Settings, tenant: str, service_process: Any
) -> None:
    proc = service_process("connector")
    await proc.wait_metrics_async(timeout_s=120)
    run = uuid.uuid4().hex[:8]
    good = [f"fs:{run}-good-{i}.md" for i in range(3)]
    poison = {
        f"fs:{run}-nul\x00id": _upsert(tenant, f"fs:{run}-nul\x00id"),
        f"fs:{run}-seq63": _upsert(tenant, f"fs:{run}-seq63", source_seq=2**63),
        f"fs:{run}-seq30": _upsert(tenant, f"fs:{run}-seq30", source_seq=10**30),
        f"fs:{run}-title": _upsert(
            tenant, f"fs:{run}-title", meta={"acl_groups": ["eng"], "title": "a\x00b"}
        ),
        f"fs:{run}-meta": _upsert(
            tenant, f"fs:{run}-meta", meta={"acl_groups": ["eng"], "metadata": {"k": "v\x00"}}
        ),
    }
    order = [
        (good[0], _upsert(tenant, good[0])),
        *poison.items(),
        (good[1], _upsert(tenant, good[1])),
        (good[2], _upsert(tenant, good[2])),
    ]
    async with EventPublisher(stack, service="test-poison") as pub:
        for key, body in order:  # all in one burst: the connector polls them as a batch
            await pub.publish_raw(
                Topics.SOURCE_CHANGES.value, json.dumps(body).encode(), key=key, headers={}
            )
    dead = await _dead_letters(stack, set(poison), timeout_s=180)
    assert sorted(d.key or "" for d in dead) == sorted(poison)
    for d in dead:
        assert d.attempts == 1 and d.stage == "connector"  # refused at once, not retried
        assert "\x00" not in d.error_message and "a\x00b" not in d.error_message
    by_key = {d.key: d for d in dead}
    assert "document_id" in by_key[f"fs:{run}-nul\x00id"].error_message
    assert "source_seq" in by_key[f"fs:{run}-seq63"].error_message
    assert "NUL" in by_key[f"fs:{run}-title"].error_message

    async def statuses() -> dict[str, str]:
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
            cur = await conn.execute(
                "SELECT document_id, status FROM document_status WHERE tenant_id = %s",
                (tenant,),
            )
            return dict(await cur.fetchall())

    deadline = time.monotonic() + 60
    got: dict[str, str] = {}
    while time.monotonic() < deadline:
        got = await statuses()
        if len(got) >= len(good):
            break
        await asyncio.sleep(0.3)
    assert got == {d: "accepted" for d in good}  # the neighbours went on; no poison row
