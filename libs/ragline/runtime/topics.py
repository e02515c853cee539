"""Create the pipeline's topics (idempotent) and read back their partition counts, over
the plain Kafka admin protocol (aiokafka), so it works on any Kafka-compatible cluster.

Topics are created with explicit configs per family (``TopicSettings``,
``RAGLINE_TOPICS_*``), never the broker's defaults:

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
    "TopicSettings",
    "TopicSetupError",
    "default_replication_factor",
    "ensure_pipeline_topics",
    "ensure_topics",
    "topic_configs",
    "topic_family",
    "topic_partitions",
]


class TopicSetupError(RaglineError):
    """The broker refused or failed to describe or create the topics."""

    def __init__(self, message: str) -> None:
        super().__init__(f"kafka: {message}")


_TOPIC_ALREADY_EXISTS = 36
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


def topic_configs(
    logical: str,
    settings: TopicSettings,
    *,
    replication_factor: int,
    max_message_bytes: int,
) -> dict[str, str]:
    """The explicit configs of one topic (logical name, without the install's prefix)."""
    hours = {
        TopicFamily.RAW: settings.raw_retention_hours,
        TopicFamily.PIPELINE: settings.retention_hours,
        TopicFamily.DLQ: settings.dlq_retention_hours,
    }[topic_family(logical)]
    return {
        "cleanup.policy": "delete",
        "retention.ms": str(int(hours * _HOUR_MS)),
        "min.insync.replicas": str(settings.min_isr(replication_factor)),
        "compression.type": settings.compression,
        # the producer's request limit (publisher.make_broker): a body below the claim
        # check threshold always fits
        "max.message.bytes": str(max(max_message_bytes * 2, 1_048_576)),
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
