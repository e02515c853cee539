"""Backlog of each stage: records on its input topics past its group's committed offset.

Read from the broker (end offsets vs. the consumer group's committed offsets), not from a
stage's own gauge, so it answers for stages that are down too. The reader never joins a
group (``assign`` + ``committed`` is an OffsetFetch), so asking never triggers a rebalance.
A stage whose group never committed on a partition counts that partition from its start.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from ragline.errors import BackendUnavailable
from ragline.runtime.kafka_security import aiokafka_options
from ragline.runtime.settings import Settings
from ragline.runtime.topology import TOPOLOGY, consumer_group

__all__ = ["StageLag", "group_lag", "stage_lag"]


@dataclass(frozen=True, kw_only=True)
class StageLag:
    stage: str
    group: str
    per_topic: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.per_topic.values())


async def group_lag(settings: Settings, group: str, topics: Iterable[str]) -> dict[str, int]:
    """Records of ``topics`` past ``group``'s committed offsets, per topic."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=group,
        enable_auto_commit=False,
        **aiokafka_options(settings),
    )
    await consumer.start()
    try:
        tps = [
            TopicPartition(t, p)
            for t in topics
            for p in sorted(consumer.partitions_for_topic(t) or ())
        ]
        if not tps:
            return {t: 0 for t in topics}
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        starts = await consumer.beginning_offsets(tps)
        out: dict[str, int] = {t: 0 for t in topics}
        for tp in tps:
            committed = await consumer.committed(tp)
            done = committed if committed is not None else starts[tp]
            out[tp.topic] += max(ends[tp] - done, 0)
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
        group = consumer_group(svc.name)
        try:
            per_topic = await group_lag(settings, group, [str(t) for t in svc.consumes])
        except KafkaError as exc:
            raise BackendUnavailable(
                f"kafka at {settings.kafka_bootstrap}: cannot read offsets of {group}: "
                f"{type(exc).__name__}"
            ) from exc
        out.append(StageLag(stage=svc.name, group=group, per_topic=per_topic))
    return out
