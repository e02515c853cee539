"""``ragline dlq`` and ``ragline topics`` against the real broker (and Postgres for claim
checks): dead letters as the runtime writes them, listed without payloads, replayed
byte for byte to their original topic, requeued when a filter keeps them, purged.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import uuid
from datetime import timedelta

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from ragline.config import Settings
from ragline.errors import BackendUnavailable, PermanentError
from ragline.events import BULK, DocFetched, DocumentMeta, Topics, dlq_topic, lane_topic
from ragline.hashing import content_hash
from ragline.ops.dlq import REPLAY_HEADER, REQUEUE_HEADER, Action, run_dlq
from ragline.ops.dlq_select import Selector
from ragline.ops.settings import OpsSettings
from ragline.runtime.deadletter import dead_letter
from ragline.runtime.lag import partitions_of
from ragline.runtime.publisher import EventPublisher

pytestmark = pytest.mark.integration

SECRET_TEXT = "payload-text-that-must-never-be-printed"
TOPIC = Topics.DOC_FETCHED.value


def _original(tenant: str, doc: str, n: int) -> tuple[bytes, dict[str, str]]:
    raw = f"{SECRET_TEXT} {n}".encode()
    ev = DocFetched(
        tenant_id=tenant,
        document_id=doc,
        source_seq=n,
        content_hash=content_hash(raw),
        meta=DocumentMeta(title="t", mime_type="text/plain", acl_groups=("eng",)),
        content_b64=base64.b64encode(raw).decode(),
        size_bytes=len(raw),
    )
    headers = {"event-type": ev.event_type, "traceparent": f"00-{uuid.uuid4().hex}-{'1' * 16}-01"}
    return ev.model_dump_json().encode(), headers


async def _dead_letter(
    settings: Settings, tenant: str, doc: str, n: int, exc: BaseException
) -> tuple[bytes, dict[str, str]]:
    """Write a dead letter exactly as the stage runtime does; return the original."""
    value, headers = _original(tenant, doc, n)
    event = DocFetched.model_validate_json(value)
    dl = dead_letter(
        stage="parser",
        topic=TOPIC,
        partition=0,
        offset=n,
        key=doc.encode(),
        value=value,
        headers=headers,
        exc=exc,
        attempts=4,
        event=event,
    )
    async with EventPublisher(settings) as pub:
        await pub.publish_raw(
            dlq_topic(TOPIC),
            dl.model_dump_json().encode(),
            key=doc,
            headers={"event-type": "dead_letter", "error-class": dl.error_class},
        )
    return value, headers


async def _end_offsets(settings: Settings, topic: str) -> dict[TopicPartition, int]:
    c = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, enable_auto_commit=False)
    await c.start()
    try:
        tps = await partitions_of(c, [topic])
        assert tps
        return dict(await c.end_offsets(tps))
    finally:
        await c.stop()


async def _read_from(settings: Settings, start: dict[TopicPartition, int], key: str) -> list:
    c = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, enable_auto_commit=False)
    await c.start()
    try:
        c.assign(list(start))
        for tp, off in start.items():
            c.seek(tp, off)
        end = await c.end_offsets(list(start))
        out = []
        deadline = asyncio.get_running_loop().time() + 20
        while asyncio.get_running_loop().time() < deadline:
            batch = await c.getmany(timeout_ms=300)
            out += [m for msgs in batch.values() for m in msgs if m.key == key.encode()]
            if all([await c.position(tp) >= end[tp] for tp in start]):
                break
        return out
    finally:
        await c.stop()


def _pending(report) -> int:  # type: ignore[no-untyped-def]
    return report.total("selected")


async def test_list_replay_requeue_purge(stack: Settings, tenant: str) -> None:
    group = f"itest-dlq-{uuid.uuid4().hex[:8]}"
    # a fresh group starts at the log start: skip what other tests dead-lettered
    await run_dlq(stack, Action.PURGE, group=group, progress=False, ops=OpsSettings())
    doc = f"fs:{tenant}/broken.md"  # one key: one partition, so order is defined
    a = await _dead_letter(stack, tenant, doc, 1, BackendUnavailable("postgres unreachable"))
    await _dead_letter(stack, tenant, doc, 2, PermanentError("unsupported layout"))
    c = await _dead_letter(stack, tenant, doc, 3, BackendUnavailable("postgres unreachable"))
    mine = Selector(tenants=frozenset({tenant}))

    listed = await run_dlq(
        stack, Action.LIST, group=group, selector=mine, progress=False, ops=OpsSettings()
    )
    assert _pending(listed) == 3
    assert listed.total("pending") == 3
    (topic,) = [t for t in listed.topics if t.selected]
    assert topic.topic == "doc.fetched.dlq"
    assert topic.by_error_class == {"BackendUnavailable": 2, "PermanentError": 1}
    assert topic.by_stage == {"parser": 3}
    assert [r["error_class"] for r in listed.records] == [
        "BackendUnavailable",
        "PermanentError",
        "BackendUnavailable",
    ]
    assert listed.records[0]["error_message"] == "postgres unreachable"
    assert listed.records[0]["attempts"] == 4
    assert SECRET_TEXT not in json.dumps(listed.records)
    assert "original_b64" not in listed.records[0]

    # dry run: counts, but nothing moves
    # a replay travels in the bulk lane by default (runtime/lanes.py)
    before = await _end_offsets(stack, lane_topic(TOPIC, BULK))
    interactive_before = await _end_offsets(stack, TOPIC)
    dry = await run_dlq(
        stack,
        Action.REPLAY,
        group=group,
        progress=False,
        dry_run=True,
        selector=Selector(
            tenants=frozenset({tenant}), error_classes=frozenset({"BackendUnavailable"})
        ),
        ops=OpsSettings(),
    )
    assert (dry.total("handled"), dry.total("requeued")) == (2, 1)
    assert (
        _pending(
            await run_dlq(
                stack, Action.LIST, group=group, selector=mine, progress=False, ops=OpsSettings()
            )
        )
        == 3
    )

    # replay the transient failures: A and C go back, B (kept, between them) is requeued
    replayed = await run_dlq(
        stack,
        Action.REPLAY,
        group=group,
        progress=False,
        selector=Selector(
            tenants=frozenset({tenant}), error_classes=frozenset({"BackendUnavailable"})
        ),
        ops=OpsSettings(),
    )
    assert (replayed.total("handled"), replayed.total("requeued")) == (2, 1)
    got = await _read_from(stack, before, doc)
    assert [m.value for m in got] == [a[0], c[0]]  # the original bytes, in order
    assert await _read_from(stack, interactive_before, doc) == []
    for m, (_, headers) in zip(got, (a, c), strict=True):
        h = {k: v.decode() for k, v in m.headers}
        assert headers.items() <= h.items()
        assert h[REPLAY_HEADER].startswith("doc.fetched.dlq:")

    left = await run_dlq(
        stack, Action.LIST, group=group, selector=mine, progress=False, ops=OpsSettings()
    )
    assert _pending(left) == 1
    assert left.records[0]["error_class"] == "PermanentError"
    # the same replay again finds nothing: the group committed past A and C
    again = await run_dlq(
        stack,
        Action.REPLAY,
        group=group,
        progress=False,
        selector=Selector(
            tenants=frozenset({tenant}), error_classes=frozenset({"BackendUnavailable"})
        ),
        ops=OpsSettings(),
    )
    assert again.total("handled") == 0
    assert len(await _read_from(stack, before, doc)) == 2

    # purge by age keeps a fresh record; by class drops it
    old = Selector(tenants=frozenset({tenant}), older_than=timedelta(hours=1))
    assert (
        await run_dlq(
            stack, Action.PURGE, group=group, selector=old, progress=False, ops=OpsSettings()
        )
    ).total("handled") == 0
    purged = await run_dlq(
        stack,
        Action.PURGE,
        group=group,
        progress=False,
        selector=Selector(tenants=frozenset({tenant}), error_classes=frozenset({"PermanentError"})),
        ops=OpsSettings(),
    )
    assert purged.total("handled") == 1
    assert (
        _pending(
            await run_dlq(
                stack, Action.LIST, group=group, selector=mine, progress=False, ops=OpsSettings()
            )
        )
        == 0
    )


async def test_limit_replays_a_canary_first(stack: Settings, tenant: str) -> None:
    group = f"itest-dlq-{uuid.uuid4().hex[:8]}"
    await run_dlq(stack, Action.PURGE, group=group, progress=False, ops=OpsSettings())
    doc = f"fs:{tenant}/many.md"
    for n in range(1, 5):
        await _dead_letter(stack, tenant, doc, n, BackendUnavailable("opensearch down"))
    mine = Selector(tenants=frozenset({tenant}))
    first = await run_dlq(
        stack, Action.REPLAY, group=group, selector=mine, limit=1, progress=False, ops=OpsSettings()
    )
    assert (first.total("handled"), first.total("requeued")) == (1, 0)
    rest = await run_dlq(
        stack, Action.REPLAY, group=group, selector=mine, progress=False, ops=OpsSettings()
    )
    assert rest.total("handled") == 3


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
        check=False,
    )


async def test_cli_list_and_replay_json(stack: Settings, tenant: str) -> None:
    group = f"itest-dlq-{uuid.uuid4().hex[:8]}"
    await run_dlq(stack, Action.PURGE, group=group, progress=False, ops=OpsSettings())
    doc = f"fs:{tenant}/cli.md"
    await _dead_letter(stack, tenant, doc, 1, PermanentError("bad table"))
    proc = await asyncio.to_thread(_cli, "dlq", "list", "--group", group, "--tenant", tenant)
    assert proc.returncode == 0, proc.stderr
    assert "doc.fetched.dlq" in proc.stdout
    assert "PermanentError" in proc.stdout and "bad table" in proc.stdout
    assert doc in proc.stdout
    assert SECRET_TEXT not in proc.stdout + proc.stderr
    proc = await asyncio.to_thread(
        _cli, "dlq", "replay", "--group", group, "--tenant", tenant, "--json", "--no-progress"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["action"] == "replay"
    assert sum(t["handled"] for t in report["topics"]) == 1
    bad = await asyncio.to_thread(_cli, "dlq", "purge", "--older-than", "soon", "--group", group)
    assert bad.returncode == 2


async def test_requeued_copy_is_still_a_dead_letter(stack: Settings, tenant: str) -> None:
    """A kept record that had to be requeued keeps its content and says where it came from."""
    group = f"itest-dlq-{uuid.uuid4().hex[:8]}"
    await run_dlq(stack, Action.PURGE, group=group, progress=False, ops=OpsSettings())
    doc = f"fs:{tenant}/requeue.md"
    await _dead_letter(stack, tenant, doc, 1, PermanentError("keep me"))
    await _dead_letter(stack, tenant, doc, 2, BackendUnavailable("drop me"))
    start = await _end_offsets(stack, dlq_topic(TOPIC))
    purged = await run_dlq(
        stack,
        Action.PURGE,
        group=group,
        progress=False,
        selector=Selector(
            tenants=frozenset({tenant}), error_classes=frozenset({"BackendUnavailable"})
        ),
        ops=OpsSettings(),
    )
    assert (purged.total("handled"), purged.total("requeued")) == (1, 1)
    (copy,) = await _read_from(stack, start, doc)
    headers = {k: v.decode() for k, v in copy.headers}
    assert REQUEUE_HEADER in headers
    assert json.loads(copy.value)["error_message"] == "keep me"
    left = await run_dlq(
        stack,
        Action.LIST,
        group=group,
        selector=Selector(tenants=frozenset({tenant})),
        progress=False,
        ops=OpsSettings(),
    )
    assert [r["error_message"] for r in left.records] == ["keep me"]


def test_topics_create_is_idempotent(stack: Settings) -> None:
    proc = _cli("topics", "create")
    assert proc.returncode == 0, proc.stderr
    assert "0 created" in proc.stdout
    listed = _cli("topics", "list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "doc.fetched.dlq" in listed.stdout and "MISSING" not in listed.stdout
