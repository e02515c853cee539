"""Pure logic of the Kafka hygiene: topic families and their configs, the topic prefix
round trip, and the per-partition lag series a consumer exports (cleared on revoke)."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import TopicPartition
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Gauge

from ragline.config import Settings
from ragline.events import ALL_TOPICS
from ragline.runtime.lag import LagRevokeListener, PartitionLagGauge
from ragline.runtime.topics import TopicFamily, TopicSettings, topic_configs, topic_family
from ragline.runtime.topology import consumer_group, logical_topic, physical_topic


def test_every_topic_has_a_family_and_raw_text_is_kept_shortest() -> None:
    families = {t: topic_family(t) for t in ALL_TOPICS}
    assert {t for t, f in families.items() if f is TopicFamily.RAW} == {
        "source.changes",
        "doc.fetched",
        "doc.parsed",
        # their bulk lanes carry the same unredacted text
        "source.changes.bulk",
        "doc.fetched.bulk",
        "doc.parsed.bulk",
    }
    assert all(f is TopicFamily.DLQ for t, f in families.items() if t.endswith(".dlq"))
    ts = TopicSettings()
    ms = {
        t: int(
            topic_configs(t, ts, replication_factor=3, max_message_bytes=900_000)["retention.ms"]
        )
        for t in ALL_TOPICS
    }
    raw = max(ms[t] for t in ALL_TOPICS if families[t] is TopicFamily.RAW)
    rest = min(ms[t] for t in ALL_TOPICS if families[t] is not TopicFamily.RAW)
    assert raw < rest
    assert ms["doc.parsed.dlq"] > ms["doc.chunked"]


@pytest.mark.parametrize(("rf", "isr"), [(1, 1), (2, 1), (3, 2), (5, 2)])
def test_min_insync_replicas(rf: int, isr: int) -> None:
    cfg = topic_configs("doc.indexed", TopicSettings(), replication_factor=rf, max_message_bytes=1)
    assert cfg["min.insync.replicas"] == str(isr)
    # an explicit value never exceeds the replicas (a topic nobody could write to)
    pinned = TopicSettings(min_insync_replicas=3)
    assert int(
        topic_configs("x", pinned, replication_factor=rf, max_message_bytes=1)[
            "min.insync.replicas"
        ]
    ) == min(3, rf)


def test_configs_are_explicit_and_fit_the_claim_check_limit() -> None:
    cfg = topic_configs(
        "doc.embedded",
        TopicSettings(compression="lz4"),
        replication_factor=3,
        max_message_bytes=900_000,
    )
    assert cfg["cleanup.policy"] == "delete" and cfg["compression.type"] == "lz4"
    assert int(cfg["max.message.bytes"]) >= 2 * 900_000  # the producer's request limit


def test_topic_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLINE_TOPICS_RAW_RETENTION_HOURS", "6")
    monkeypatch.setenv("RAGLINE_TOPICS_COMPRESSION", "gzip")
    ts = TopicSettings()
    assert ts.raw_retention_hours == 6 and ts.compression == "gzip"
    with pytest.raises(ValueError):
        TopicSettings(raw_retention_hours=0)


@given(
    prefix=st.from_regex(r"[A-Za-z0-9._-]{0,20}", fullmatch=True),
    topic=st.sampled_from(ALL_TOPICS),
)
def test_prefix_round_trip(prefix: str, topic: str) -> None:
    assert logical_topic(physical_topic(topic, prefix), prefix) == topic
    assert Settings(kafka_topic_prefix=prefix).kafka_topic_prefix == prefix
    assert consumer_group("parser", prefix).startswith(prefix)


@pytest.mark.parametrize("bad", ["a b", "x/", "é", "a\x00", "\u200b", "p" * 101])
def test_hostile_prefixes_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        Settings(kafka_topic_prefix=bad)


def test_two_prefixes_never_share_a_name() -> None:
    a = {physical_topic(t, "blue.") for t in ALL_TOPICS} | {consumer_group("x", "blue.")}
    b = {physical_topic(t, "green.") for t in ALL_TOPICS} | {consumer_group("x", "green.")}
    assert not a & b


def _series(registry: CollectorRegistry) -> dict[tuple[str, str, str], float]:
    out = {}
    for metric in registry.collect():
        for s in metric.samples:
            out[(s.labels["stage"], s.labels["topic"], s.labels["partition"])] = s.value
    return out


def test_lag_series_follow_the_assignment() -> None:
    reg = CollectorRegistry()
    gauge = Gauge("lag", "x", ["stage", "topic", "partition"], registry=reg)
    lag = PartitionLagGauge("parser", "stg.", gauge)
    p0, p1, p2 = (TopicPartition("stg.doc.fetched", p) for p in range(3))
    lag.set(p0, 5)
    lag.set(p1, -3)  # never negative
    assert _series(reg) == {
        ("parser", "doc.fetched", "0"): 5,  # the logical topic name
        ("parser", "doc.fetched", "1"): 0,
    }
    # a scale-up moves p1 to another replica: its series must go, not freeze
    asyncio.run(LagRevokeListener(lag).on_partitions_revoked({p1}))
    assert set(_series(reg)) == {("parser", "doc.fetched", "0")}
    lag.set(p2, 7)
    asyncio.run(LagRevokeListener(lag).on_partitions_assigned({p2}))  # p0 left meanwhile
    assert set(_series(reg)) == {("parser", "doc.fetched", "2")}
    lag.revoke({p0})  # revoking what is not exported is harmless
    lag.clear()
    assert _series(reg) == {} and lag.exported == frozenset()


class _FakeConsumer:
    """What ``StageRunner._probe_lag`` asks of an aiokafka consumer."""

    def __init__(self, tps: set[TopicPartition]) -> None:
        self.tps = tps

    def assignment(self) -> set[TopicPartition]:
        return set(self.tps)

    def highwater(self, tp: TopicPartition) -> int:
        return 100

    async def committed(self, tp: TopicPartition) -> int | None:
        return None if tp.partition == 1 else 60

    async def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: 10 for tp in tps}

    async def position(self, tp: TopicPartition) -> int:  # prefetched far ahead
        raise AssertionError("lag must not be measured from the fetch position")


def test_lag_is_measured_from_the_committed_offset() -> None:
    import logging
    from types import SimpleNamespace

    from ragline.runtime.consumer import StageRunner

    reg = CollectorRegistry()
    gauge = Gauge("lag", "x", ["stage", "topic", "partition"], registry=reg)
    runner = SimpleNamespace(lag=PartitionLagGauge("parser", "", gauge), log=logging.getLogger())
    tps = {TopicPartition("doc.fetched", 0), TopicPartition("doc.fetched", 1)}
    asyncio.run(StageRunner._probe_lag(runner, _FakeConsumer(tps), runner.lag))  # type: ignore[arg-type]
    assert _series(reg) == {
        ("parser", "doc.fetched", "0"): 40,  # 100 - committed 60
        ("parser", "doc.fetched", "1"): 90,  # never committed: from the log start (10)
    }
    asyncio.run(StageRunner._probe_lag(runner, _FakeConsumer(set()), runner.lag))  # type: ignore[arg-type]
    assert _series(reg) == {}  # nothing owned any more: nothing exported


def test_the_topic_table_has_every_topic_once_with_its_settings() -> None:
    from ragline.runtime.topics import topic_table

    rows = topic_table(TopicSettings(), partitions=6, replication_factor=3, max_message_bytes=1)
    assert [r.logical for r in rows] == list(ALL_TOPICS)
    assert {(r.partitions, r.replication_factor, r.min_insync_replicas) for r in rows} == {
        (6, 3, 2)
    }
    assert {r.cleanup_policy for r in rows} == {"delete"}  # changes, not latest states
    by = {r.logical: r for r in rows}
    assert by["doc.fetched.bulk"].retention_hours == by["doc.fetched"].retention_hours == 72
    for r in rows:  # the table is what creation sets
        cfg = topic_configs(r.logical, TopicSettings(), replication_factor=3, max_message_bytes=1)
        assert cfg["retention.ms"] == str(int(r.retention_hours * 3_600_000))


def test_a_prefixed_install_grants_only_its_own_names() -> None:
    """Every topic and group an ACL of the plan names carries the install's prefix, and
    the dlq tool's group is the one its reader commits in (it was granted unprefixed,
    so the tool was refused its group on a cluster with an authorizer)."""
    from ragline.ops.settings import OpsSettings
    from ragline.runtime.topic_plan import service_acls
    from ragline.runtime.topology import physical_group

    prefix = "acme."
    acls = service_acls(prefix, dlq_group=OpsSettings().dlq_group)
    named = [a for a in acls if a.resource_type in ("Topic", "Group")]
    assert named and all(a.resource.startswith(prefix) for a in named), [
        a.resource for a in named if not a.resource.startswith(prefix)
    ]
    tool_groups = {
        a.resource for a in acls if a.principal == "dlq-tool" and a.resource_type == "Group"
    }
    assert tool_groups == {physical_group(OpsSettings().dlq_group, prefix)}
