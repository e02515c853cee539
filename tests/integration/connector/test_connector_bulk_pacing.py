"""Bulk pacing on the real broker (connector/fairness.py, docs/lanes.md "Tenant
fairness"): ``bulk_backlog`` counts the records waiting on every stage's ``.bulk``
topics past its bulk group and what those groups have consumed; a ``BulkPacer`` reading
it holds a publisher while the backlog is full and lets go when no stage consumes.
Its own topic prefix: no other test's records. No duration is asserted."""

from __future__ import annotations

import uuid

import pytest
from aiokafka import AIOKafkaConsumer

from ragline.config import Settings
from ragline.connector.fairness import BulkPacer, bulk_backlog
from ragline.events import BULK, DocControl, DocumentMeta, SourceUpsert, Topics, lane_topic
from ragline.runtime.lag import partitions_of
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics
from ragline.runtime.topology import consumer_group, physical_topic

pytestmark = pytest.mark.integration


async def commit_all(settings: Settings, stage: str, logical: str) -> None:
    """The stage's bulk group commits everything on ``logical`` (as if it had consumed it)."""
    topic = physical_topic(logical, settings.kafka_topic_prefix)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=consumer_group(stage, settings.kafka_topic_prefix, BULK),
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        tps = await partitions_of(consumer, [topic])
        assert tps
        ends = await consumer.end_offsets(tps)
        consumer.assign(tps)
        await consumer.commit({tp: off for tp, off in ends.items()})
    finally:
        await consumer.stop()


async def test_the_bulk_backlog_and_a_pacer_reading_it(stack: Settings, tenant: str) -> None:
    settings = stack.model_copy(update={"kafka_topic_prefix": f"bp{uuid.uuid4().hex[:6]}."})
    await ensure_pipeline_topics(
        settings, partitions=2, replication_factor=1, topic_settings=TopicSettings()
    )
    assert await bulk_backlog(settings) == (0, 0)
    async with EventPublisher(settings, service="test") as pub:
        for i in range(3):
            up = SourceUpsert(
                tenant_id=tenant,
                document_id=f"fs:b{i}",
                source_seq=1,
                meta=DocumentMeta(),
                content_text="x",
                priority=BULK,
            )
            await pub.publish(Topics.SOURCE_CHANGES, up)
        for i in range(2):
            ctl = DocControl(
                tenant_id=tenant, document_id=f"fs:c{i}", source_seq=1, action="delete"
            )
            await pub.publish(Topics.DOC_CONTROL, ctl.model_copy(update={"priority": BULK}))
            await pub.publish(Topics.DOC_CONTROL, ctl)  # interactive: not bulk work
    assert await bulk_backlog(settings) == (5, 0)
    await commit_all(settings, "connector", lane_topic(Topics.SOURCE_CHANGES.value, BULK))
    assert await bulk_backlog(settings) == (2, 3)  # the connector consumed its three

    # full (2 >= 2) and nobody consumes: the pacer waits, then gives up pacing
    pacer = BulkPacer(2, lambda: bulk_backlog(settings), step=1, poll_s=0.2, stall_s=1.0)
    await pacer.admit()
    assert pacer.stalled and pacer.readings >= 2
    # room (2 < 3): no wait
    roomy = BulkPacer(3, lambda: bulk_backlog(settings), step=1)
    await roomy.admit()
    assert roomy.readings == 1 and not roomy.stalled
