"""``stage_lag`` / ``ragline lag`` against the real broker: a record published to a stage's
input topic is backlog until the stage's group commits past it; asking never joins the
group."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from ragline.config import Settings
from ragline.events import BULK, INTERACTIVE, Topics, lane_topic
from ragline.runtime.lag import group_lag, partitions_of, stage_lag
from ragline.runtime.topics import ensure_topics

pytestmark = pytest.mark.integration


async def _commit_to_end(settings: Settings, group: str, topic: str) -> None:
    c = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap, group_id=group, enable_auto_commit=False
    )
    await c.start()
    try:
        tps = await partitions_of(c, [topic])
        assert tps
        c.assign(tps)
        ends = await c.end_offsets(tps)
        await c.commit(dict(ends))
    finally:
        await c.stop()


async def test_backlog_counts_records_past_the_committed_offset(stack: Settings) -> None:
    # a topic and a group of its own: pipeline topics get records from other tests'
    # background work, and a stage's group may have live members
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"lag-test-{suffix}", f"lag-test-{suffix}"
    await ensure_topics(stack.kafka_bootstrap, [topic], partitions=3)
    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap)
    await producer.start()
    try:

        async def send(*keys: bytes) -> None:
            for key in keys:
                await producer.send_and_wait(topic, b"{}", key=key)

        await send(b"doc-0", b"doc-1")
        assert await group_lag(stack, group, [topic]) == {topic: 2}  # never committed
        await _commit_to_end(stack, group, topic)
        assert await group_lag(stack, group, [topic]) == {topic: 0}
        await send(b"doc-a", b"doc-b", b"doc-c")
        assert await group_lag(stack, group, [topic]) == {topic: 3}
        assert await group_lag(stack, f"{group}-new", [topic]) == {topic: 5}
        await _commit_to_end(stack, group, topic)
        assert await group_lag(stack, group, [topic]) == {topic: 0}
    finally:
        await producer.stop()


async def test_every_stage_is_reported_and_unknown_stages_refused(stack: Settings) -> None:
    lags = await stage_lag(stack)
    assert [x.stage for x in lags][:2] == ["connector", "parser"]
    assert {x.stage for x in lags} >= {"indexer", "cache_invalidator"}
    indexer_inputs = (Topics.DOC_EMBEDDED, Topics.DOC_CONTROL, Topics.DOC_QUARANTINED)
    assert set(next(x for x in lags if x.stage == "indexer").per_topic) == {
        lane_topic(t.value, lane) for t in indexer_inputs for lane in (INTERACTIVE, BULK)
    }
    with pytest.raises(ValueError, match="unknown stage"):
        await stage_lag(stack, ["nope"])


def test_cli_reports_json_and_wait_fails_while_behind(stack: Settings) -> None:
    env = {**os.environ}
    ok = subprocess.run(
        [sys.executable, "-m", "ragline.cli", "lag", "--stage", "parser", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["parser"]["group"] == "ragline-parser"
    assert Topics.DOC_FETCHED.value in report["parser"]
    bad = subprocess.run(
        [sys.executable, "-m", "ragline.cli", "lag", "--stage", "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 2 and "unknown stage" in bad.stderr
