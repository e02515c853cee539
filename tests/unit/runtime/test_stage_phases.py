"""Where a consumer's time goes (``ragline_stage_seconds_total``, issue 29): the stage's
own work, awaiting the broker's acknowledgement of its outputs, the offset commit and
the wait for the next poll are counted apart, so a profile can tell a stage that waits
on the broker from one that computes. The broker's part is a timed stand-in here (its
latency is the point, not its behaviour); the real broker runs in bench/freshness_bench.py
--profile."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

from ragline.config import Settings
from ragline.events import BULK, INTERACTIVE, DocFetched, DocumentMeta, Lane, Topics
from ragline.runtime.consumer import StageRunner
from ragline.runtime.health import ConsumerHealth
from ragline.runtime.lanes import LaneGate
from ragline.runtime.metrics import LANE_BATCHES, LANE_MESSAGES, STAGE_SECONDS
from ragline.runtime.stage import Output

HANDLE_S, ACK_S, COMMIT_S, GAP_S = 0.06, 0.04, 0.03, 0.1

EVENT = DocFetched(
    tenant_id="acme",
    document_id="fs:a.md",
    source_seq=1,
    content_hash="0" * 64,
    meta=DocumentMeta(acl_groups=("eng",)),
    content_b64=base64.b64encode(b"x").decode(),
    size_bytes=1,
)


class _Stage:
    name = "phases-test"

    async def handle_batch(self, events: list[Any], ctx: Any) -> list[Any]:
        await asyncio.sleep(HANDLE_S)
        return [[Output(topic=Topics.DOC_PARSED.value, event=e)] for e in events]


class _Publisher:
    async def resolve(self, body: bytes, headers: dict[str, str]) -> bytes:
        return body


class _Raw:
    topic = Topics.DOC_FETCHED.value
    partition = 0
    offset = 7
    key = b"fs:a.md"
    value = EVENT.model_dump_json().encode()
    headers = ()


class _Msg:
    raw_message = _Raw()

    async def ack(self) -> None:  # the offset commit's round trip
        await asyncio.sleep(COMMIT_S)


def _runner() -> StageRunner:
    runner = StageRunner.__new__(StageRunner)
    runner.stage = _Stage()  # type: ignore[assignment]
    runner.settings = Settings(release_memory_bytes=0)
    runner.log = logging.getLogger("test")
    runner.prefix = ""
    runner.gate = LaneGate()
    runner._subscriber = None
    runner.publisher = _Publisher()  # type: ignore[assignment]
    runner.fatal = None
    runner.health = ConsumerHealth()
    runner._last_end = {}

    async def publish(rec: Any, event: Any, out: Any) -> None:  # the producer's ack
        await asyncio.sleep(ACK_S)

    runner._publish_output = publish  # type: ignore[method-assign]
    return runner


def _value(metric: Any, *labels: str) -> float:
    return float(metric.labels(*labels)._value.get())


def _phases(lane: Lane) -> dict[str, float]:
    return {
        p: _value(STAGE_SECONDS, "phases-test", lane, p)
        for p in ("handle", "produce", "commit", "gate", "idle")
    }


def test_each_phase_is_counted_in_its_own_lane() -> None:
    before = {lane: _phases(lane) for lane in (INTERACTIVE, BULK)}
    msgs0 = _value(LANE_MESSAGES, "phases-test", BULK)
    polls0 = _value(LANE_BATCHES, "phases-test", BULK)
    runner = _runner()

    async def two_polls() -> None:
        await runner.on_message(_Msg(), BULK)
        await asyncio.sleep(GAP_S)  # nothing to poll meanwhile
        await runner.on_message(_Msg(), BULK)

    asyncio.run(two_polls())
    after = _phases(BULK)
    got = {p: after[p] - before[BULK][p] for p in after}
    # lower bounds only (a sleep lasts at least its time; how much longer depends on
    # the machine): a phase counted under another leaves its own short
    assert got["handle"] >= 2 * HANDLE_S, got
    assert got["produce"] >= 2 * ACK_S, got
    assert got["commit"] >= 2 * COMMIT_S, got
    assert got["idle"] >= GAP_S, got  # the first poll has no "before"
    assert _value(LANE_MESSAGES, "phases-test", BULK) - msgs0 == 2
    assert _value(LANE_BATCHES, "phases-test", BULK) - polls0 == 2
    assert _phases(INTERACTIVE) == before[INTERACTIVE]  # nothing leaked into the other lane
