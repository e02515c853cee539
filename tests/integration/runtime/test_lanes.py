"""Priority lanes on the real broker (runtime/lanes.py, docs/adr/0012): a stage serves its
interactive topic before its bulk backlog, every output stays in its input's lane, and
both consumer groups commit what they handled (lag drains to zero on both lanes).

The stage under test is a stand-in with a slow bulk path, run by the real
``StageRunner`` under its own topic prefix (no other test's records). Only the order of
events is asserted, never a duration.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import ClassVar

import pytest
from runtime_helpers import markdown_fetched, read_events

from ragline.config import Settings
from ragline.events import (
    BULK,
    INTERACTIVE,
    DocControl,
    DocFetched,
    Topics,
    lane_topic,
)
from ragline.runtime.consumer import StageRunner
from ragline.runtime.lag import wait_drained
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.stage import Output, Stage, StageContext
from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics

pytestmark = pytest.mark.integration

BULK_DOCS = 16


class _SlowBulk(Stage[DocFetched, DocControl]):
    """doc.fetched in, a doc.control out; a bulk event takes a while."""

    name: ClassVar[str] = "parser"  # its topology entry (lag); own prefix, own groups
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_FETCHED.value,)

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.seen: list[tuple[str, str]] = []  # (lane, document_id) at handle start
        self.bulk_started = asyncio.Event()

    async def process(self, event: DocFetched, ctx: StageContext) -> Sequence[Output[DocControl]]:
        self.seen.append((event.priority, event.document_id))
        if event.priority == BULK:
            self.bulk_started.set()
            await asyncio.sleep(0.25)
        out = DocControl(**event.derived("lanetest"), action="delete")
        return [Output(topic=Topics.DOC_CONTROL.value, event=out)]


async def test_interactive_overtakes_the_bulk_backlog_and_lanes_are_kept(
    stack: Settings, tenant: str
) -> None:
    settings = stack.model_copy(update={"kafka_topic_prefix": f"ln{uuid.uuid4().hex[:6]}."})
    await ensure_pipeline_topics(
        settings, partitions=2, replication_factor=1, topic_settings=TopicSettings()
    )
    stage = _SlowBulk(settings)
    runner = StageRunner(stage, settings, logging.getLogger("test.lanes"))
    await stage.start()
    await runner.broker.start()
    try:
        async with EventPublisher(settings, service="test") as pub:
            for i in range(BULK_DOCS):
                await pub.publish(
                    Topics.DOC_FETCHED, markdown_fetched(tenant, f"fs:{tenant}/b{i}", lane=BULK)
                )
            await asyncio.wait_for(stage.bulk_started.wait(), 120)
            before = sum(1 for lane, _ in stage.seen if lane == BULK)
            await pub.publish(
                Topics.DOC_FETCHED, markdown_fetched(tenant, f"fs:{tenant}/edit", lane=INTERACTIVE)
            )
        lags = await wait_drained(settings, ["parser"], timeout_s=120)
        assert sum(x.total for x in lags) == 0, lags  # both groups committed everything
        assert {t for x in lags for t in x.per_topic} == {
            Topics.DOC_FETCHED.value,
            lane_topic(Topics.DOC_FETCHED.value, BULK),
        }
    finally:
        await runner.broker.stop()

    order = [d for _, d in stage.seen]
    assert sorted(order) == sorted(
        [f"fs:{tenant}/b{i}" for i in range(BULK_DOCS)] + [f"fs:{tenant}/edit"]
    )
    # the edit started before the bulk backlog: at most the bulk batch in flight and one
    # that had passed its gate when the edit arrived went before it
    bulk_before_edit = order.index(f"fs:{tenant}/edit")
    assert bulk_before_edit <= before + 2 < BULK_DOCS, (before, order)
    assert runner.gate.waited_s > 0  # bulk did yield

    # outputs stay in their input's lane: bulk on doc.control.bulk, the edit on doc.control
    bulk_out = await read_events(settings, lane_topic(Topics.DOC_CONTROL.value, BULK), BULK_DOCS)
    inter_out = await read_events(settings, Topics.DOC_CONTROL.value, 1)
    assert sorted(e["document_id"] for e in bulk_out) == sorted(
        f"fs:{tenant}/b{i}" for i in range(BULK_DOCS)
    )
    assert all(e["priority"] == "bulk" for e in bulk_out)
    assert [e["document_id"] for e in inter_out] == [f"fs:{tenant}/edit"]
    assert "priority" not in inter_out[0]  # interactive events are written as before
