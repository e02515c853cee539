"""Two installs, one broker: with different ``RAGLINE_KAFKA_TOPIC_PREFIX`` values two
parser processes share the test stack's Kafka and never see each other's events (topics
and consumer groups both carry the prefix); the topics are created with their family's
configs; ``ragline lag`` reads each install's own groups; /readyz answers from the
running consumer."""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from runtime_helpers import markdown_fetched

from ragline.config import Settings
from ragline.events import ALL_TOPICS, Topics
from ragline.runtime.lag import stage_lag
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics
from ragline.runtime.topology import physical_topic

pytestmark = pytest.mark.integration


async def _read_all(settings: Settings, topic: str, want: int, timeout_s: float = 90) -> list[str]:
    """Document ids on the broker topic ``topic`` (a physical name) until ``want`` seen."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=None,  # no group: every partition at once, no join wait (~5 s)
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    seen: list[str] = []
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while len(seen) < want and loop.time() < deadline:
            for msgs in (await consumer.getmany(timeout_ms=500)).values():
                seen.extend(json.loads(m.value)["document_id"] for m in msgs)
        # a little longer, to the end of the topic: anything from the other install
        # would show up now
        while loop.time() < deadline + 30 and (batch := await consumer.getmany(timeout_ms=1500)):
            for msgs in batch.values():
                seen.extend(json.loads(m.value)["document_id"] for m in msgs)
    finally:
        await consumer.stop()
    return seen


async def _configs(settings: Settings, topics: list[str]) -> dict[str, dict[str, str]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap)
    await admin.start()
    try:
        resp = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        )
    finally:
        await admin.close()
    out: dict[str, dict[str, str]] = {}
    for r in resp:
        for res in r.resources:
            _code, _msg, _type, name, entries = res[:5]
            out[name] = {e[0]: e[1] for e in entries}
    return out


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_two_prefixes_share_a_broker_without_cross_talk(
    stack: Settings, service_process: Any, tenant: str
) -> None:
    run = uuid.uuid4().hex[:6]
    installs = {
        name: stack.model_copy(update={"kafka_topic_prefix": f"{name}{run}."})
        for name in ("blue", "green")
    }
    for s in installs.values():
        report = await ensure_pipeline_topics(
            s, partitions=2, replication_factor=1, topic_settings=TopicSettings()
        )
        assert set(report.created) == {physical_topic(t, s.kafka_topic_prefix) for t in ALL_TOPICS}
    procs = {
        name: service_process("parser", env={"RAGLINE_KAFKA_TOPIC_PREFIX": s.kafka_topic_prefix})
        for name, s in installs.items()
    }
    await asyncio.gather(*(p.wait_metrics_async(timeout_s=120) for p in procs.values()))

    docs = {name: [f"fs:{tenant}/{name}-{i}.md" for i in range(3)] for name in installs}
    for name, s in installs.items():
        async with EventPublisher(s) as pub:
            for doc in docs[name]:
                await pub.publish(Topics.DOC_FETCHED, markdown_fetched(tenant, doc))

    for name, s in installs.items():
        parsed = await _read_all(s, physical_topic(Topics.DOC_PARSED, s.kafka_topic_prefix), 3)
        assert sorted(parsed) == sorted(docs[name]), name  # its own documents, only once
    # the unprefixed topics of the shared stack saw none of it
    assert not set(await _read_all(stack, Topics.DOC_PARSED, 0, timeout_s=1)) & {
        d for ds in docs.values() for d in ds
    }

    # each install's lag is read from its own group and topics: both drained
    for s in installs.values():
        (lag,) = await stage_lag(s, ["parser"])
        assert lag.group == f"{s.kafka_topic_prefix}ragline-parser"
        for _ in range(60):
            if lag.total == 0:
                break
            await asyncio.sleep(0.5)
            (lag,) = await stage_lag(s, ["parser"])
        assert lag.total == 0

    # the running consumer answers its probes from the event loop
    for p in procs.values():
        base = p.metrics_url.removesuffix("/metrics")
        assert await asyncio.to_thread(_get, f"{base}/healthz") == 200
        assert await asyncio.to_thread(_get, f"{base}/readyz") == 200


async def test_topics_are_created_with_their_family_configs(stack: Settings) -> None:
    s = stack.model_copy(update={"kafka_topic_prefix": f"cfg{uuid.uuid4().hex[:6]}."})
    await ensure_pipeline_topics(
        s, partitions=1, replication_factor=1, topic_settings=TopicSettings()
    )
    p = s.kafka_topic_prefix
    raw, mid, dlq = (physical_topic(t, p) for t in ("doc.parsed", "doc.chunked", "doc.parsed.dlq"))
    try:
        configs = await _configs(s, [raw, mid, dlq])
    except Exception as exc:  # pragma: no cover - a broker without DescribeConfigs
        pytest.skip(f"the local broker cannot describe topic configs: {type(exc).__name__}")
    hours = {t: int(configs[t]["retention.ms"]) // 3_600_000 for t in (raw, mid, dlq)}
    assert hours == {raw: 72, mid: 168, dlq: 336}
    assert configs[raw]["compression.type"] == "zstd"
    assert configs[raw]["min.insync.replicas"] == "1"


async def test_existing_topics_are_left_alone_and_their_drift_reported(stack: Settings) -> None:

    s = stack.model_copy(update={"kafka_topic_prefix": f"drift{uuid.uuid4().hex[:6]}."})
    first = await ensure_pipeline_topics(
        s, partitions=1, replication_factor=1, topic_settings=TopicSettings()
    )
    assert first.config_drift == {}
    again = await ensure_pipeline_topics(
        s,
        partitions=1,
        replication_factor=1,
        topic_settings=TopicSettings(raw_retention_hours=24),
    )
    assert again.created == ()
    raw = physical_topic("doc.parsed", s.kafka_topic_prefix)
    assert again.config_drift[raw] == {"retention.ms": (str(72 * 3_600_000), str(24 * 3_600_000))}
    assert physical_topic("doc.chunked", s.kafka_topic_prefix) not in again.config_drift
    configs = await _configs(s, [raw])
    assert configs[raw]["retention.ms"] == str(72 * 3_600_000)  # not altered
