"""Backlog of each stage: records on its input topics past its group's committed offset.

Read from the broker (end offsets vs. the consumer group's committed offsets), not from a
stage's own gauge, so it answers for stages that are down too. The reader never joins a
group (``assign`` + ``committed`` is an OffsetFetch), so asking never triggers a rebalance.
A stage whose group never committed on a partition counts that partition from its start.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from prometheus_client import Gauge

from ragline.config import Settings
from ragline.runtime.kafka_errors import kafka_errors
from ragline.runtime.kafka_security import aiokafka_options
from ragline.runtime.lanes import lane_inputs
from ragline.runtime.metrics import CONSUMER_LAG
from ragline.runtime.topology import TOPOLOGY, consumer_group, logical_topic, physical_topic

__all__ = [
    "LagRevokeListener",
    "PartitionLagGauge",
    "StageLag",
    "group_lag",
    "group_offsets",
    "partitions_of",
    "stage_lag",
    "wait_drained",
]


async def partitions_of(consumer: AIOKafkaConsumer, topics: Iterable[str]) -> list[TopicPartition]:
    """Every partition of the existing ones among ``topics`` (names as on the broker).

    Asks the cluster: Apache Kafka 4 answers the metadata request aiokafka makes at
    start-up with no topics, so ``partitions_for_topic`` of a consumer that subscribed
    to nothing is None (on any topic) until the client fetches the metadata itself."""
    with kafka_errors("read the topic metadata"):
        cluster = await consumer._client.fetch_all_metadata()
    return [
        TopicPartition(t, p)
        for t in dict.fromkeys(topics)
        for p in sorted(cluster.partitions_for_topic(t) or ())
    ]


class PartitionLagGauge:
    """The per-partition lag series one consumer exports, and only for partitions it owns.

    After a rebalance (a scale-up moves a partition to another replica) the old owner
    must stop exporting the partition: a frozen value would stay forever and the lag
    alert, summing over pods, would count the partition twice. Series are removed when
    partitions are revoked (``LagRevokeListener``), when a probe finds them no longer
    assigned (a missed callback), and when the consumer stops."""

    def __init__(self, stage: str, prefix: str = "", gauge: Gauge = CONSUMER_LAG) -> None:
        self.stage = stage
        self.prefix = prefix
        self.gauge = gauge
        self._exported: set[tuple[str, int]] = set()

    def _labels(self, key: tuple[str, int]) -> tuple[str, str, str]:
        return (self.stage, key[0], str(key[1]))

    def set(self, tp: TopicPartition, lag: int) -> None:
        key = (logical_topic(tp.topic, self.prefix), tp.partition)
        self.gauge.labels(*self._labels(key)).set(max(0, lag))
        self._exported.add(key)

    def revoke(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            key = (logical_topic(tp.topic, self.prefix), tp.partition)
            if key in self._exported:
                self._exported.discard(key)
                self.gauge.remove(*self._labels(key))

    def retain(self, assigned: Iterable[TopicPartition]) -> None:
        keep = {(logical_topic(tp.topic, self.prefix), tp.partition) for tp in assigned}
        for key in self._exported - keep:
            self._exported.discard(key)
            self.gauge.remove(*self._labels(key))

    def clear(self) -> None:
        self.retain(())

    @property
    def exported(self) -> frozenset[tuple[str, int]]:
        return frozenset(self._exported)


class LagRevokeListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Drops the lag series of revoked partitions at once (before the new owner exports)."""

    def __init__(self, gauge: PartitionLagGauge) -> None:
        self.gauge = gauge

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.gauge.revoke(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.gauge.retain(assigned)


@dataclass(frozen=True, kw_only=True)
class StageLag:
    stage: str
    group: str
    per_topic: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.per_topic.values())


async def group_lag(settings: Settings, group: str, topics: Iterable[str]) -> dict[str, int]:
    """Records of ``topics`` (logical names: the install's prefix is added) past
    ``group``'s committed offsets, per topic."""
    return {t: lag for t, (lag, _) in (await group_offsets(settings, group, topics)).items()}


async def group_offsets(
    settings: Settings, group: str, topics: Iterable[str]
) -> dict[str, tuple[int, int]]:
    """Per topic: (records past ``group``'s committed offsets, the sum of those offsets:
    grows as the group commits)."""
    topics = list(topics)
    prefix = settings.kafka_topic_prefix
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=group,
        enable_auto_commit=False,
        **aiokafka_options(settings),
    )
    await consumer.start()
    try:
        names = {physical_topic(t, prefix): t for t in topics}
        tps = await partitions_of(consumer, names)
        if not tps:
            return {t: (0, 0) for t in topics}
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        starts = await consumer.beginning_offsets(tps)
        out: dict[str, tuple[int, int]] = {t: (0, 0) for t in topics}
        for tp in tps:
            committed = await consumer.committed(tp)
            done = committed if committed is not None else starts[tp]
            lag, at = out[names[tp.topic]]
            out[names[tp.topic]] = (lag + max(ends[tp] - done, 0), at + done)
        return out
    finally:
        await consumer.stop()


async def stage_lag(settings: Settings, stages: Iterable[str] | None = None) -> list[StageLag]:
    """The backlog of ``stages`` (default: every stage of the topology), in topology order."""
    wanted = set(stages) if stages is not None else None
    known = {s.name for s in TOPOLOGY}
    if wanted is not None and (unknown := wanted - known):
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; known: {sorted(known)}")
    out: list[StageLag] = []
    for svc in TOPOLOGY:
        if wanted is not None and svc.name not in wanted:
            continue
        group = consumer_group(svc.name, settings.kafka_topic_prefix)
        per_topic: dict[str, int] = {}
        with kafka_errors(f"read the offsets of {group} at {settings.kafka_bootstrap}"):
            # both lanes (runtime/lanes.py): the bulk consumer has its own group
            for lane, topics in lane_inputs(tuple(str(t) for t in svc.consumes)).items():
                lane_group = consumer_group(svc.name, settings.kafka_topic_prefix, lane)
                per_topic.update(await group_lag(settings, lane_group, topics))
        out.append(StageLag(stage=svc.name, group=group, per_topic=per_topic))
    return out


async def wait_drained(
    settings: Settings, stages: Iterable[str] | None, *, timeout_s: float, poll_s: float = 0.3
) -> list[StageLag]:
    """Poll ``stage_lag`` until every named stage's backlog is 0 or ``timeout_s`` passed;
    returns the last reading (the caller decides whether "still behind" is an error).

    One reading covers the stages in topology order, so "indexer 0, cache_invalidator 0"
    means the invalidator had already seen every ``doc.indexed`` the indexer committed."""
    names = list(stages) if stages is not None else None
    deadline = time.monotonic() + timeout_s
    while True:
        lags = await stage_lag(settings, names)
        if sum(x.total for x in lags) == 0 or time.monotonic() >= deadline:
            return lags
        await asyncio.sleep(poll_s)
