"""Who consumes and produces which topic: the wiring of ARCHITECTURE.md in one place.

Used to publish the AsyncAPI document and checked against every built stage by a test.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragline.events import Topics

__all__ = [
    "TOPOLOGY",
    "ServiceTopology",
    "consumer_group",
    "logical_topic",
    "physical_group",
    "physical_topic",
]


def consumer_group(stage: str, prefix: str = "", lane: str = "interactive") -> str:
    """The Kafka consumer group a stage commits its offsets under (``prefix``:
    ``RAGLINE_KAFKA_TOPIC_PREFIX``, shared with the topic names); its bulk lane's
    consumer has its own group, ``...-bulk`` (runtime/lanes.py)."""
    return f"{prefix}ragline-{stage}" + ("-bulk" if lane == "bulk" else "")


def physical_group(group: str, prefix: str = "") -> str:
    """The broker's name of a tool's consumer group (``ragline dlq``'s
    ``RAGLINE_OPS_DLQ_GROUP``): prefixed like the topics, so the ACL plan and the tool
    name the same group."""
    return f"{prefix}{group}"


def physical_topic(logical: str, prefix: str = "") -> str:
    """The broker's name of a pipeline topic. The code speaks logical names
    (``doc.parsed``); only the Kafka boundary (publisher, consumer, lag, topic creation,
    dlq tool) adds the install's prefix, so two installs share a cluster without
    reading each other's topics or committing in each other's groups."""
    return f"{prefix}{logical}"


def logical_topic(physical: str, prefix: str = "") -> str:
    """Inverse of ``physical_topic`` (a name without the prefix is returned as is)."""
    return physical[len(prefix) :] if prefix and physical.startswith(prefix) else physical


@dataclass(frozen=True, kw_only=True)
class ServiceTopology:
    name: str
    consumes: tuple[str, ...]
    produces: tuple[str, ...]
    description: str


TOPOLOGY: tuple[ServiceTopology, ...] = (
    ServiceTopology(
        name="connector",
        consumes=(Topics.SOURCE_CHANGES,),
        produces=(Topics.DOC_FETCHED, Topics.DOC_CONTROL),
        description="intake of source changes; drops unchanged content; fast-paths deletes/ACL",
    ),
    ServiceTopology(
        name="parser",
        consumes=(Topics.DOC_FETCHED,),
        produces=(Topics.DOC_PARSED,),
        description="every format into one structured-document model",
    ),
    ServiceTopology(
        name="scanner",
        consumes=(Topics.DOC_PARSED,),
        produces=(Topics.DOC_SCANNED,),
        description="secrets and PII redacted/tagged/blocked, injection flagged",
    ),
    ServiceTopology(
        name="chunker",
        consumes=(Topics.DOC_SCANNED,),
        # doc.scanned: a heavy document is sent on to its bulk lane (docs/lanes.md)
        produces=(Topics.DOC_CHUNKED, Topics.DOC_SCANNED),
        description="structure-first parent/child chunks with deterministic ids",
    ),
    ServiceTopology(
        name="enricher",
        consumes=(Topics.DOC_CHUNKED,),
        produces=(Topics.DOC_ENRICHED,),
        description="language, entities, dates, contextual header, provenance",
    ),
    ServiceTopology(
        name="embedder",
        consumes=(Topics.DOC_ENRICHED,),
        # doc.enriched: a huge document handed on after a slice (embedding/stage.py)
        produces=(Topics.DOC_EMBEDDED, Topics.DOC_ENRICHED),
        description="micro-batched embeddings with a Postgres embedding cache",
    ),
    ServiceTopology(
        name="indexer",
        consumes=(Topics.DOC_EMBEDDED, Topics.DOC_CONTROL, Topics.DOC_QUARANTINED),
        produces=(Topics.DOC_INDEXED,),
        description="exactly-once effect into Postgres/pgvector and OpenSearch",
    ),
    ServiceTopology(
        name="cache_invalidator",
        consumes=(Topics.DOC_INDEXED,),
        produces=(),
        description="evicts answer-cache entries that depend on a changed document",
    ),
)
