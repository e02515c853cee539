"""Create the pipeline's topics (idempotent) and read back their partition counts, over
the plain Kafka admin protocol (aiokafka), so it works on any Kafka-compatible cluster.

``topic_table`` is the one table of every topic: partitions, replication factor
(default ``min(3, live brokers)``), ``min.insync.replicas``, retention, cleanup policy.
Topics are created with explicit configs per family (``TopicSettings``,
``RAGLINE_TOPICS_*``), never the broker's defaults (and never auto-created):

- **raw**: topics before the scanner (``source.changes``, ``doc.fetched``,
  ``doc.parsed``) carry unredacted text (secrets, PII): the shortest retention;
- **pipeline**: the later topics (redacted text, chunks, vectors, control events);
- **dlq**: ``*.dlq`` keep a failure long enough to be looked at and replayed (their
  bodies are claim checks, never document text);

and on every topic ``min.insync.replicas`` (with ``acks=all`` a write needs that many
replicas), ``compression.type``, ``max.message.bytes`` (bodies above
``RAGLINE_KAFKA_MAX_MESSAGE_BYTES`` go through the claim check) and
``cleanup.policy=delete``. Existing topics are never altered: `ragline topics create`
only creates what is missing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragline.config import Settings
from ragline.errors import BackendUnavailable, RaglineError
from ragline.events import lane_of_topic
from ragline.runtime.kafka_errors import error_name, kafka_errors
from ragline.runtime.kafka_security import aiokafka_options
from ragline.runtime.topology import physical_topic

__all__ = [
    "RAW_TOPICS",
    "TopicFamily",
    "TopicReport",
    "TopicRow",
    "TopicSettings",
    "TopicSetupError",
    "default_replication_factor",
    "ensure_pipeline_topics",
    "ensure_topics",
    "topic_configs",
    "topic_family",
    "topic_partitions",
    "topic_row",
    "topic_table",
]


class TopicSetupError(RaglineError):
    """The broker refused or failed to describe or create the topics."""

    def __init__(self, message: str) -> None:
        super().__init__(f"kafka: {message}")


_TOPIC_ALREADY_EXISTS = 36
# new partitions get their leaders in well under a second on an idle broker; minutes of
# a loaded 2-core machine (load average 50+) took over 10 s
_LEADER_WAIT_S = 120.0
_HOUR_MS = 3_600_000

# before the scanner: the text is not redacted yet
RAW_TOPICS: frozenset[str] = frozenset({"source.changes", "doc.fetched", "doc.parsed"})


class TopicFamily(StrEnum):
    RAW = "raw"
    PIPELINE = "pipeline"
    DLQ = "dlq"


def topic_family(logical: str) -> TopicFamily:
    if logical.endswith(".dlq"):
        return TopicFamily.DLQ
    # a bulk twin (`doc.fetched.bulk`) carries the same text as its topic
    base = lane_of_topic(logical)[0]
    return TopicFamily.RAW if base in RAW_TOPICS else TopicFamily.PIPELINE


class TopicSettings(BaseSettings):
    """Configs of the topics ``ragline topics create`` (and ``ragline stack up``) make."""

    model_config = SettingsConfigDict(env_prefix="RAGLINE_TOPICS_", extra="ignore", frozen=True)

    raw_retention_hours: float = Field(
        default=72, gt=0, description="retention of the pre-scanner topics (unredacted text)"
    )
    retention_hours: float = Field(
        default=168, gt=0, description="retention of the other pipeline topics"
    )
    dlq_retention_hours: float = Field(
        default=336, gt=0, description="retention of the .dlq topics"
    )
    min_insync_replicas: int | None = Field(
        default=None,
        ge=1,
        description="default: 2 with a replication factor of 3 or more, else 1",
    )
    compression: Literal["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"] = Field(
        default="zstd", description="compression.type of every topic"
    )

    def min_isr(self, replication_factor: int) -> int:
        if self.min_insync_replicas is not None:
            return min(self.min_insync_replicas, replication_factor)
        return 2 if replication_factor >= 3 else 1


@dataclass(frozen=True, kw_only=True)
class TopicRow:
    """One topic as ``ragline topics create`` (and ``ragline stack up``) makes it."""

    logical: str  # without the install's prefix
    family: TopicFamily
    partitions: int
    replication_factor: int
    min_insync_replicas: int
    retention_hours: float
    # no topic is compacted: each record is one change of a document, and compaction
    # would drop a change a lagging consumer has not seen yet; the latest state of a
    # document lives in Postgres
    cleanup_policy: Literal["delete", "compact"]
    compression: str
    max_message_bytes: int


def topic_row(
    logical: str,
    settings: TopicSettings,
    *,
    partitions: int,
    replication_factor: int,
    max_message_bytes: int,
) -> TopicRow:
    family = topic_family(logical)
    hours = {
        TopicFamily.RAW: settings.raw_retention_hours,
        TopicFamily.PIPELINE: settings.retention_hours,
        TopicFamily.DLQ: settings.dlq_retention_hours,
    }[family]
    return TopicRow(
        logical=logical,
        family=family,
        partitions=partitions,
        replication_factor=replication_factor,
        min_insync_replicas=settings.min_isr(replication_factor),
        retention_hours=hours,
        cleanup_policy="delete",
        compression=settings.compression,
        # the producer's request limit (publisher.make_broker): a body below the claim
        # check threshold always fits
        max_message_bytes=max(max_message_bytes * 2, 1_048_576),
    )


def topic_table(
    settings: TopicSettings,
    *,
    partitions: int,
    replication_factor: int,
    max_message_bytes: int,
) -> list[TopicRow]:
    """Every pipeline and dead-letter topic, one row each: the one table of what the
    platform creates (a bulk twin has its topic's partitions: keys stay in step)."""
    from ragline.events import ALL_TOPICS

    return [
        topic_row(
            t,
            settings,
            partitions=partitions,
            replication_factor=replication_factor,
            max_message_bytes=max_message_bytes,
        )
        for t in ALL_TOPICS
    ]


def topic_configs(
    logical: str,
    settings: TopicSettings,
    *,
    replication_factor: int,
    max_message_bytes: int,
) -> dict[str, str]:
    """The explicit configs of one topic (logical name, without the install's prefix)."""
    row = topic_row(
        logical,
        settings,
        partitions=1,
        replication_factor=replication_factor,
        max_message_bytes=max_message_bytes,
    )
    return {
        "cleanup.policy": row.cleanup_policy,
        "retention.ms": str(int(row.retention_hours * _HOUR_MS)),
        "min.insync.replicas": str(row.min_insync_replicas),
        "compression.type": row.compression,
        "max.message.bytes": str(row.max_message_bytes),
    }


@dataclass(frozen=True, kw_only=True)
class TopicReport:
    created: tuple[str, ...]
    existing: tuple[str, ...]
    partitions: Mapping[str, int] = field(default_factory=dict)
    # existing topics whose configs differ from what creation would set:
    # topic -> {key: (on the broker, wanted)}; never altered, only reported
    config_drift: Mapping[str, Mapping[str, tuple[str | None, str]]] = field(default_factory=dict)
    # of the topics this call created
    replication_factor: int = 1

    def mismatched(self, wanted: int) -> dict[str, int]:
        """Existing topics whose partition count differs from ``wanted`` (never altered)."""
        return {t: n for t, n in self.partitions.items() if n != wanted}


def _client(
    bootstrap: str, timeout_s: float, options: Mapping[str, Any] | None = None
) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(
        bootstrap_servers=bootstrap,
        request_timeout_ms=int(timeout_s * 1000),
        client_id="ragline-stack",
        **(options or {}),
    )


async def _describe(client: AIOKafkaAdminClient, topics: list[str]) -> dict[str, int]:
    described: list[dict[str, Any]] = await client.describe_topics(topics)
    out: dict[str, int] = {}
    for t in described:
        if t.get("error_code", 0) == 0:
            out[str(t["topic"])] = len(t.get("partitions", []))
    return out


async def topic_partitions(
    bootstrap: str,
    topics: Iterable[str],
    *,
    timeout_s: float = 10.0,
    options: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """Partition count of each of ``topics`` that exists (``options``: aiokafka security)."""
    client = _client(bootstrap, timeout_s, options)
    try:
        with kafka_errors("describe topics"):
            await client.start()
            return await _describe(client, list(topics))
    except BackendUnavailable as exc:
        raise TopicSetupError(str(exc)) from exc
    finally:
        await client.close()


async def ensure_topics(
    bootstrap: str,
    topics: Iterable[str],
    *,
    partitions: int,
    replication_factor: int | None = None,
    timeout_s: float = 10.0,
    options: Mapping[str, Any] | None = None,
    configs: Callable[[str, int], Mapping[str, str]] | None = None,
) -> TopicReport:
    """Create each missing topic with ``partitions`` partitions and
    ``configs(topic, replication_factor)``; existing ones are fine (and left as they are).
    ``replication_factor`` None: :func:`default_replication_factor` of the live brokers."""
    wanted = list(dict.fromkeys(topics))
    client = _client(bootstrap, timeout_s, options)
    try:
        with kafka_errors("set up topics"):
            await client.start()
            rf = replication_factor or await _default_rf(client)
            present = set(await client.list_topics())
            missing = [t for t in wanted if t not in present]
            created = await _create(client, missing, partitions, rf, configs)
            await _until_led(client, created, max(timeout_s, _LEADER_WAIT_S))
            counts = await _describe(client, wanted)
            existing = [t for t in wanted if t not in created]
            drift = await _config_drift(client, existing, rf, configs) if configs else {}
    except BackendUnavailable as exc:
        raise TopicSetupError(str(exc)) from exc
    finally:
        await client.close()
    return TopicReport(
        created=tuple(created),
        existing=tuple(t for t in wanted if t not in created),
        partitions=counts,
        config_drift=drift,
        replication_factor=rf,
    )


def default_replication_factor(live_brokers: int) -> int:
    """Three copies where the cluster has three brokers (with ``min.insync.replicas`` 2,
    one broker may go away without stopping a write); otherwise as many as there are."""
    return max(1, min(3, live_brokers))


async def _default_rf(client: AIOKafkaAdminClient) -> int:
    meta: dict[str, Any] = await client.describe_cluster()
    return default_replication_factor(len(meta.get("brokers", [])))


async def _create(
    client: AIOKafkaAdminClient,
    missing: list[str],
    partitions: int,
    replication_factor: int,
    configs: Callable[[str, int], Mapping[str, str]] | None,
) -> list[str]:
    """Create ``missing``; returns the topics this call created."""
    if not missing:
        return []
    resp = await client.create_topics(
        [
            NewTopic(
                t,
                partitions,
                replication_factor,
                topic_configs=dict(configs(t, replication_factor)) if configs else None,
            )
            for t in missing
        ]
    )
    created: list[str] = []
    for topic, code, *_ in resp.topic_errors:
        if code == 0:
            created.append(topic)
        elif code != _TOPIC_ALREADY_EXISTS:  # lost a race with another `up`: fine
            raise TopicSetupError(f"cannot create {topic}: {error_name(code)}")
    return created


async def _until_led(client: AIOKafkaAdminClient, topics: list[str], timeout_s: float) -> None:
    """Wait until every partition of ``topics`` has a leader. Kafka answers CreateTopics
    once the controller committed them; a broker learns of them a moment later, and until
    then a produce gets NOT_LEADER and a describe UNKNOWN_TOPIC."""
    deadline = time.monotonic() + timeout_s
    pending = list(topics)
    while pending:
        described: list[dict[str, Any]] = await client.describe_topics(pending)
        led = {
            str(t["topic"])
            for t in described
            if t.get("error_code", 0) == 0
            and t.get("partitions")
            and all(p.get("leader", -1) >= 0 for p in t["partitions"])
        }
        pending = [t for t in pending if t not in led]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TopicSetupError(f"no leader after {timeout_s:.0f} s for {pending[:3]}")
        await asyncio.sleep(0.1)


async def _config_drift(
    client: AIOKafkaAdminClient,
    topics: list[str],
    replication_factor: int,
    configs: Callable[[str, int], Mapping[str, str]],
) -> dict[str, dict[str, tuple[str | None, str]]]:
    """What differs between the broker's configs of ``topics`` and ``configs(topic)``
    ({} when the broker cannot describe configs)."""
    if not topics:
        return {}
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    try:
        with kafka_errors("describe topic configs"):
            responses = await client.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
            )
    except (BackendUnavailable, ValueError, TypeError):
        return {}
    have: dict[str, dict[str, str | None]] = {}
    for response in responses:
        for resource in response.resources:
            code, _msg, _type, name, entries = resource[:5]
            if code == 0:
                have[str(name)] = {str(e[0]): e[1] for e in entries}
    drift: dict[str, dict[str, tuple[str | None, str]]] = {}
    for topic in topics:
        if topic not in have:
            continue
        diff = {
            key: (have[topic].get(key), want)
            for key, want in configs(topic, replication_factor).items()
            if have[topic].get(key) != want
        }
        if diff:
            drift[topic] = diff
    return drift


async def ensure_pipeline_topics(
    settings: Settings,
    *,
    partitions: int,
    replication_factor: int | None = None,
    timeout_s: float = 10.0,
    topic_settings: TopicSettings,
) -> TopicReport:
    """Every pipeline and dead-letter topic under the install's prefix
    (``RAGLINE_KAFKA_TOPIC_PREFIX``), each with its family's configs. The report names
    the topics as the broker does (prefixed)."""
    from ragline.events import ALL_TOPICS

    ts = topic_settings
    prefix = settings.kafka_topic_prefix
    physical = {physical_topic(t, prefix): t for t in ALL_TOPICS}
    return await ensure_topics(
        settings.kafka_bootstrap,
        physical,
        partitions=partitions,
        replication_factor=replication_factor,
        timeout_s=timeout_s,
        options=aiokafka_options(settings),
        configs=lambda name, rf: topic_configs(
            physical[name],
            ts,
            replication_factor=rf,
            max_message_bytes=settings.kafka_max_message_bytes,
        ),
    )
