"""The contracts between services: every event on every topic, and the topic names.

Events are pydantic v2 models, frozen, ``extra="forbid"`` so that an unknown field is a
precise validation error rather than silently dropped data. Every event carries the
envelope fields (``EventBase``) and a ``schema_version``; ``schemas/`` holds the JSON
Schema generated from these models (``make schemas``).

Reading is strict at the edge and tolerant inside (docs/adr/0010-event-evolution.md):
``read_event`` validates ``source.changes`` (the external contract) strictly, and every
internal topic tolerantly: unknown fields (at any depth) are ignored and schema versions
``MIN_SCHEMA_VERSION..MAX_READ_SCHEMA_VERSION`` are accepted, so during a rolling upgrade
an old consumer reads what a new producer added instead of dead-lettering it.

The document model (``Block``/``ParsedDocument``) and the chunk model (``Chunk``) live
here too because they travel inside events: one normalized structure for every format,
so nothing downstream of the parser has per-format paths.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragline.scan_seal import SEAL_RE, digest

__all__ = [
    "ALL_TOPICS",
    "BIGINT_MAX",
    "BULK",
    "CONTENT_TOPICS",
    "EVENT_MODELS",
    "INTERACTIVE",
    "LANED_TOPICS",
    "SCHEMA_VERSION",
    "TEXT_META_FIELDS",
    "AclChange",
    "Block",
    "BlockFlags",
    "BlockKind",
    "Chunk",
    "ChunkLevel",
    "Classification",
    "ContentRef",
    "DeadLetter",
    "DocChunked",
    "DocControl",
    "DocEmbedded",
    "DocEnriched",
    "DocFetched",
    "DocIndexed",
    "DocParsed",
    "DocQuarantined",
    "DocScanned",
    "DocumentMeta",
    "Enrichment",
    "EventBase",
    "FindingsSummary",
    "IndexAction",
    "Lane",
    "ParsedDocument",
    "SourceAclChange",
    "SourceChange",
    "SourceDelete",
    "SourceUpsert",
    "TableData",
    "Topics",
    "TrustLevel",
    "acl_digest",
    "change_identity",
    "dlq_topic",
    "document_seal_input",
    "input_adapter",
    "lane_of_topic",
    "lane_topic",
    "meta_seal_input",
    "meta_sealed",
    "read_event",
    "seal_problem",
    "unstorable",
]

SCHEMA_VERSION = 1  # what this code writes
# what internal readers accept: back to the oldest version a still-running producer may
# write, and one ahead (the next release, during a rolling upgrade)
MIN_SCHEMA_VERSION = 1
MAX_READ_SCHEMA_VERSION = SCHEMA_VERSION + 1
TOLERANT = "ragline.tolerant"  # validation-context key of a tolerant (internal) read
# every sequence is a Postgres bigint: a larger value cannot be stored, so it is refused
BIGINT_MAX = 2**63 - 1

_TENANT_RE = r"^[a-z0-9][a-z0-9_-]{0,62}$"
# `<source>:<external id>`: the source name is a slug, the external id is anything printable
_DOCUMENT_ID_RE = r"^[a-z0-9][a-z0-9_.-]{0,62}:[^\s].{0,511}$"
_SHA256_RE = r"^[0-9a-f]{64}$"
_GROUP_RE = r"^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}$"


class Topics(StrEnum):
    """Every topic name in one place. Topics are keyed by ``document_id``."""

    SOURCE_CHANGES = "source.changes"
    DOC_FETCHED = "doc.fetched"
    DOC_PARSED = "doc.parsed"
    DOC_SCANNED = "doc.scanned"
    DOC_QUARANTINED = "doc.quarantined"
    DOC_CHUNKED = "doc.chunked"
    DOC_ENRICHED = "doc.enriched"
    DOC_EMBEDDED = "doc.embedded"
    # deletes and ACL changes take a fast path from the connector straight to the
    # indexer, so a revocation is never stuck behind an embedding backlog (docs/adr/0002)
    DOC_CONTROL = "doc.control"
    DOC_INDEXED = "doc.indexed"


# the topics a version of a document passes through between the connector and the
# indexer, in pipeline order (doc.indexed, the indexer's output, follows them)
CONTENT_TOPICS: tuple[Topics, ...] = (
    Topics.DOC_FETCHED,
    Topics.DOC_PARSED,
    Topics.DOC_SCANNED,
    Topics.DOC_CHUNKED,
    Topics.DOC_ENRICHED,
    Topics.DOC_EMBEDDED,
)


def dlq_topic(topic: str) -> str:
    """The dead-letter topic of ``topic``."""
    return f"{topic}.dlq"


# Priority lanes (docs/adr/0012): every pipeline topic but doc.indexed has a bulk twin
# ``<topic>.bulk``, keyed by document_id like its interactive topic. The lane travels in
# the envelope (``EventBase.priority``); stages serve the interactive topic first and a
# document's versions may cross lanes, so the seq guards (indexing/order.py) decide.
Lane: TypeAlias = Literal["interactive", "bulk"]
INTERACTIVE: Lane = "interactive"
BULK: Lane = "bulk"
_BULK_SUFFIX = ".bulk"
LANED_TOPICS: frozenset[str] = frozenset(t.value for t in Topics if t is not Topics.DOC_INDEXED)


def lane_topic(topic: str, lane: Lane) -> str:
    """The topic of ``lane`` for logical ``topic`` (the topic itself if it has no lanes)."""
    return f"{topic}{_BULK_SUFFIX}" if lane == BULK and topic in LANED_TOPICS else topic


def lane_of_topic(topic: str) -> tuple[str, Lane]:
    """``(base topic, lane)`` of a logical topic name: ``doc.parsed.bulk`` -> bulk."""
    base = topic.removesuffix(_BULK_SUFFIX)
    return (base, BULK) if base != topic and base in LANED_TOPICS else (topic, INTERACTIVE)


# dead letters of both lanes go to the base topic's .dlq (a replay picks the lane)
ALL_TOPICS: tuple[str, ...] = (
    tuple(t.value for t in Topics)
    + tuple(lane_topic(t.value, BULK) for t in Topics if t.value in LANED_TOPICS)
    + tuple(dlq_topic(t.value) for t in Topics)
)


class Classification(StrEnum):
    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"


class TrustLevel(StrEnum):
    """How far a source's text can be trusted when it is shown to a model."""

    HIGH = "high"  # curated, owned documentation
    MEDIUM = "medium"  # internal wiki, shared drives
    LOW = "low"  # tickets, uploads, external web


def _tolerant(info: ValidationInfo) -> bool:
    return isinstance(info.context, dict) and bool(info.context.get(TOLERANT))


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)

    @model_validator(mode="before")
    @classmethod
    def _drop_unknown_when_tolerant(cls, data: Any, info: ValidationInfo) -> Any:
        """A tolerant read (``read_event`` of an internal topic) ignores fields a newer
        producer added, here and in every nested model; construction stays strict."""
        if isinstance(data, dict) and _tolerant(info):
            return {k: v for k, v in data.items() if k in cls.model_fields}
        return data


def _now() -> datetime:
    return datetime.now(UTC)


def derive_event_id(event_id: str, step: str) -> str:
    """Deterministic id of what ``step`` (a stage, an output kind, a scanner version...)
    emits for input ``event_id``."""
    return hashlib.sha256(f"{step}\0{event_id}".encode()).hexdigest()[:32]


def change_identity(
    tenant_id: str, document_id: str, kind: str, source_seq: int, digest: str = ""
) -> str:
    """The platform's identity of one change: what it *is* (tenant, document, kind of
    change, sequence, content/ACL digest), never the id its caller chose. Two deliveries
    of the same change share it; changes of different tenants or documents never do.
    Consumers that deduplicate (the indexer's ledger) key on this (docs/adr/0006)."""
    parts = ("change-v1", tenant_id, document_id, kind, str(source_seq), digest)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def acl_digest(acl_groups: tuple[str, ...], classification: str | None) -> str:
    """A stable digest of an ACL statement (sorted groups, classification or '-')."""
    return hashlib.sha256(
        "\0".join((*sorted(set(acl_groups)), "|", classification or "-")).encode()
    ).hexdigest()[:32]


def _new_id() -> str:
    return str(uuid.uuid4())


_SURROGATE = re.compile("[\ud800-\udfff]")


def unstorable(value: Any, *, allow_nul: bool = False) -> str | None:
    """Why ``value`` (a string, or any container/model of strings) cannot be stored as
    Postgres text or JSON (a NUL, a lone surrogate), or None. Never echoes the value."""
    if isinstance(value, str):
        if not allow_nul and "\x00" in value:
            return "contains a NUL character (U+0000), which cannot be stored"
        if _SURROGATE.search(value):
            return "contains a lone surrogate (U+D800..U+DFFF), which is not valid Unicode"
        return None
    if isinstance(value, BaseModel):
        value = dict(value)
    items: Iterable[tuple[Any, Any]] = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, tuple | list):
        items = enumerate(value)
    for k, v in items:
        if isinstance(k, str) and unstorable(k) is not None:
            return f"a key {unstorable(k)}"
        why = unstorable(v)
        if why is not None:
            return f"{k}: {why}"
    return None


MetadataValue: TypeAlias = str | int | float | bool | None

# the DocumentMeta fields that can carry free text, with their empty value: the scanner
# redacts and seals them; a quarantine of an unscanned document carries none of them
_EMPTY_TEXT: dict[str, Any] = {
    "uri": None,
    "title": None,
    "mime_type": None,
    "version": None,
    "series_id": None,
    "supersedes": (),
    "metadata": {},
    "scan_seal": None,
}
TEXT_META_FIELDS: tuple[str, ...] = tuple(f for f in _EMPTY_TEXT if f != "scan_seal")


class DocumentMeta(_Model):
    """What the source says about a document (authoritative, travels with every event)."""

    source_type: str = Field(
        default="generic",
        pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$",
        description="kind of source system: filesystem, webhook, wiki, ticket, ...",
    )
    uri: str | None = Field(default=None, max_length=2048)
    title: str | None = Field(default=None, max_length=1024)
    mime_type: str | None = Field(default=None, max_length=255)
    acl_groups: tuple[Annotated[str, Field(pattern=_GROUP_RE)], ...] = Field(
        default=(), description="groups allowed to read the document; empty = nobody but admins"
    )
    classification: Classification = Classification.INTERNAL
    trust: TrustLevel = TrustLevel.MEDIUM
    version: str | None = Field(default=None, max_length=64)
    series_id: str | None = Field(
        default=None,
        max_length=512,
        description="documents that are versions of one another share a series id",
    )
    supersedes: tuple[str, ...] = Field(
        default=(), description="document ids this document replaces (marked superseded)"
    )
    effective_date: date | None = None
    expiry_date: date | None = None
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None
    language: str | None = Field(default=None, pattern=r"^[a-z]{2}$")
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    # written only by the scanner (ragline.scan_seal): absent on every raw meta, so what
    # releases before the seal wrote stays byte-for-byte the same
    scan_seal: str | None = Field(
        default=None,
        pattern=SEAL_RE,
        exclude_if=lambda v: v is None,
        description="set by the scanner: digest of the text fields as scanned; every "
        "post-scanner publish, read and index write checks it (docs/scanning.md)",
    )

    @field_validator("acl_groups")
    @classmethod
    def _sorted_unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(v)))

    def text_fields(self) -> dict[str, Any]:
        """The fields that can carry free text (what the scanner redacts and seals)."""
        return {f: getattr(self, f) for f in TEXT_META_FIELDS}

    def without_text(self) -> DocumentMeta:
        """This meta without any free-text field: what may describe a document whose
        text was not (or not completely) scanned, e.g. on ``doc.quarantined``."""
        return self.model_copy(update=dict(_EMPTY_TEXT))

    @property
    def has_text(self) -> bool:
        return any(getattr(self, f) != _EMPTY_TEXT[f] for f in TEXT_META_FIELDS)

    @model_validator(mode="after")
    def _dates_in_order(self) -> DocumentMeta:
        if self.effective_date and self.expiry_date and self.expiry_date < self.effective_date:
            raise ValueError("expiry_date is before effective_date")
        return self


class EventBase(_Model):
    """The envelope every event carries."""

    event_id: str = Field(default_factory=_new_id, min_length=1, max_length=64)
    event_type: str
    schema_version: int = Field(
        default=SCHEMA_VERSION, ge=MIN_SCHEMA_VERSION, le=MAX_READ_SCHEMA_VERSION
    )
    occurred_at: AwareDatetime = Field(default_factory=_now)
    tenant_id: str = Field(pattern=_TENANT_RE)
    document_id: str = Field(pattern=_DOCUMENT_ID_RE)
    content_hash: str | None = Field(
        default=None, pattern=_SHA256_RE, description="sha256 of the normalized source bytes"
    )
    source_seq: int = Field(ge=0, le=BIGINT_MAX, description="monotonic per document")
    traceparent: str | None = Field(default=None, max_length=128)
    # written only when bulk: an interactive event is byte-for-byte what releases
    # before the lanes wrote (docs/adr/0012)
    priority: Lane = Field(
        default=INTERACTIVE,
        exclude_if=lambda v: v == INTERACTIVE,
        description="lane: interactive (served first) or bulk (sync, backfill, replay); "
        "carried to every stage's output",
    )
    # written only when not 0: an event of a document never reset is byte-for-byte what
    # releases before the reset generation wrote (docs/adr/0008, amendment 2026-12-01)
    seq_epoch: int = Field(
        default=0,
        ge=0,
        le=BIGINT_MAX,
        exclude_if=lambda v: v == 0,
        description="the document's reset generation when the connector accepted the "
        "change (ragline documents reset-seq increments it); the indexer refuses an "
        "event of an older generation as stale. Carried to every stage's output",
    )

    @field_validator("schema_version")
    @classmethod
    def _version_readable(cls, v: int, info: ValidationInfo) -> int:
        # strict (the edge, and events this code builds): never a version it does not
        # write yet; a tolerant internal read accepts one ahead (the Field bounds)
        if v > SCHEMA_VERSION and not _tolerant(info):
            raise ValueError(f"schema_version {v} is newer than this release writes")
        return v

    @property
    def source(self) -> str:
        return self.document_id.split(":", 1)[0]

    def derived(self, step: str) -> dict[str, Any]:
        """The envelope of the event ``step`` emits for this one: same tenant, document,
        content hash, sequence, trace and ``occurred_at`` (when the source change
        happened), and an id derived from this event's id scoped by tenant and document,
        so a redelivered input yields the same output event (consumers can deduplicate)
        and two documents never share one."""
        scope = f"{self.tenant_id}\0{self.document_id}\0{self.event_id}"
        return {
            "event_id": derive_event_id(scope, step),
            "occurred_at": self.occurred_at,
            "tenant_id": self.tenant_id,
            "document_id": self.document_id,
            "content_hash": self.content_hash,
            "source_seq": self.source_seq,
            "traceparent": self.traceparent,
            "priority": self.priority,
            "seq_epoch": self.seq_epoch,
        }


# --------------------------------------------------------------------------- source.changes


class ContentRef(_Model):
    """A fetchable reference instead of inline content."""

    kind: Literal["file", "http"]
    location: str = Field(min_length=1, max_length=4096)


class _SourceEvent(EventBase):
    """What a source may send: everything must be storable (no NUL, no lone surrogate;
    ``content_text`` may hold NULs, the parser turns control characters into spaces)."""

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, v: Any, info: ValidationInfo) -> Any:
        why = unstorable(v, allow_nul=info.field_name == "content_text")
        if why is not None:
            raise ValueError(why)
        return v


class SourceUpsert(_SourceEvent):
    event_type: Literal["source.upsert"] = "source.upsert"
    meta: DocumentMeta
    content_text: str | None = Field(default=None, description="inline text content")
    content_b64: str | None = Field(default=None, description="inline binary content, base64")
    content_ref: ContentRef | None = None

    @model_validator(mode="after")
    def _exactly_one_content(self) -> SourceUpsert:
        given = [
            n
            for n, v in (
                ("content_text", self.content_text),
                ("content_b64", self.content_b64),
                ("content_ref", self.content_ref),
            )
            if v is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "exactly one of content_text, content_b64, content_ref is required; "
                f"got {given or 'none'}"
            )
        return self


class SourceDelete(_SourceEvent):
    event_type: Literal["source.delete"] = "source.delete"


class SourceAclChange(_SourceEvent):
    event_type: Literal["source.acl"] = "source.acl"
    acl_groups: tuple[Annotated[str, Field(pattern=_GROUP_RE)], ...]
    classification: Classification | None = None

    @field_validator("acl_groups")
    @classmethod
    def _sorted_unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(v)))


SourceChange = Annotated[
    SourceUpsert | SourceDelete | SourceAclChange, Field(discriminator="event_type")
]

# --------------------------------------------------------------------------- document model


class BlockKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    TABLE = "table"
    CODE = "code"
    QUOTE = "quote"
    TURN = "turn"  # a transcript turn


class TableData(_Model):
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str | None = None
    units: str | None = None


class BlockFlags(_Model):
    """Set by the scanner; travels with the block into chunks and the index."""

    injection_suspect: bool = False
    injection_rules: tuple[str, ...] = ()
    pii_types: tuple[str, ...] = ()  # types kept in the text under the `tag` policy
    redactions: int = 0


class Block(_Model):
    kind: BlockKind
    text: str
    section_path: tuple[str, ...] = ()
    level: int | None = Field(default=None, ge=1, le=9, description="heading level")
    page: int | None = Field(default=None, ge=1)
    line_start: int | None = Field(default=None, ge=1)
    line_end: int | None = Field(default=None, ge=1)
    table: TableData | None = None
    language: str | None = Field(default=None, description="code language")
    symbol: str | None = Field(default=None, description="code unit: qualified name")
    signature: str | None = None
    imports: tuple[str, ...] = ()
    speaker: str | None = None
    timestamp: str | None = None
    flags: BlockFlags = BlockFlags()

    @model_validator(mode="after")
    def _table_has_data(self) -> Block:
        if self.kind is BlockKind.TABLE and self.table is None:
            raise ValueError("a table block needs `table`")
        return self


class ParsedDocument(_Model):
    title: str | None = None
    format: str = Field(description="markdown, html, text, pdf, docx, csv, code, transcript")
    blocks: tuple[Block, ...]
    page_count: int | None = None
    encoding: str | None = None
    scan_seal: str | None = Field(
        default=None,
        pattern=SEAL_RE,
        exclude_if=lambda v: v is None,
        description="set by the scanner: digest of the document as scanned",
    )


class FindingsSummary(_Model):
    """Types, counts and positions of what the scanner found: never the values."""

    counts: dict[str, int] = Field(default_factory=dict)  # e.g. {"secret:aws_access_key": 1}
    positions: tuple[tuple[str, int, int, int], ...] = Field(
        default=(), description="(type, block index, start, end) after redaction offsets"
    )
    injection_blocks: tuple[int, ...] = ()
    policy: str = "default"

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# --------------------------------------------------------------------------- pipeline events


class DocFetched(EventBase):
    event_type: Literal["doc.fetched"] = "doc.fetched"
    content_hash: str = Field(pattern=_SHA256_RE)
    meta: DocumentMeta
    content_b64: str
    size_bytes: int = Field(ge=0)
    change: Literal["content", "metadata", "resync"] = "content"


class DocParsed(EventBase):
    event_type: Literal["doc.parsed"] = "doc.parsed"
    content_hash: str = Field(pattern=_SHA256_RE)
    meta: DocumentMeta
    document: ParsedDocument
    change: Literal["content", "metadata", "resync"] = "content"


class DocScanned(EventBase):
    event_type: Literal["doc.scanned"] = "doc.scanned"
    content_hash: str = Field(pattern=_SHA256_RE)
    meta: DocumentMeta
    document: ParsedDocument
    findings: FindingsSummary
    scanner_version: str
    change: Literal["content", "metadata", "resync"] = "content"


class DocQuarantined(EventBase):
    event_type: Literal["doc.quarantined"] = "doc.quarantined"
    meta: DocumentMeta | None = None
    stage: str
    reason_code: str = Field(pattern=r"^[a-z0-9_]{1,64}$")
    reason: str = Field(max_length=1000, description="never contains document text or values")
    findings: FindingsSummary | None = None


class ChunkLevel(StrEnum):
    PARENT = "parent"
    CHILD = "child"


class Enrichment(_Model):
    language: str = Field(pattern=r"^[a-z]{2}$|^und$")
    content_type: str
    entities: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    dates: tuple[str, ...] = ()
    contextual_header: str
    provenance: dict[str, Literal["source", "inferred"]] = Field(default_factory=dict)


class Chunk(_Model):
    chunk_id: str = Field(pattern=_SHA256_RE)
    parent_id: str | None = Field(default=None, pattern=_SHA256_RE)
    level: ChunkLevel
    ordinal: int = Field(ge=0)
    text: str = Field(min_length=1)
    section_path: tuple[str, ...] = ()
    content_type: str = Field(description="text, table, code, transcript, list, mixed")
    page_start: int | None = None
    page_end: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    token_count: int = Field(ge=0)
    strategy: str
    strategy_version: str
    flags: BlockFlags = BlockFlags()
    extra: dict[str, MetadataValue | list[str]] = Field(default_factory=dict)
    enrichment: Enrichment | None = None
    embedding: tuple[float, ...] | None = None


class _ChunksEvent(EventBase):
    content_hash: str = Field(pattern=_SHA256_RE)
    meta: DocumentMeta
    chunks: tuple[Chunk, ...]
    findings: FindingsSummary = FindingsSummary()
    change: Literal["content", "metadata", "resync"] = "content"


class DocChunked(_ChunksEvent):
    event_type: Literal["doc.chunked"] = "doc.chunked"


class DocEnriched(_ChunksEvent):
    event_type: Literal["doc.enriched"] = "doc.enriched"

    @model_validator(mode="after")
    def _all_enriched(self) -> DocEnriched:
        if any(c.enrichment is None for c in self.chunks):
            raise ValueError("every chunk of doc.enriched needs `enrichment`")
        return self


class DocEmbedded(_ChunksEvent):
    event_type: Literal["doc.embedded"] = "doc.embedded"
    embedding_model: str
    embedding_revision: str
    embedding_dim: int = Field(gt=0)

    @model_validator(mode="after")
    def _children_embedded(self) -> DocEmbedded:
        for c in self.chunks:
            if c.level is ChunkLevel.CHILD:
                if c.embedding is None:
                    raise ValueError(f"child chunk {c.ordinal} has no embedding")
                if len(c.embedding) != self.embedding_dim:
                    raise ValueError(
                        f"child chunk {c.ordinal} has {len(c.embedding)} dims, "
                        f"expected {self.embedding_dim}"
                    )
        return self


class AclChange(_Model):
    acl_groups: tuple[str, ...]
    classification: Classification | None = None
    narrowing: bool = Field(
        default=False,
        exclude_if=lambda v: not v,  # absent unless set: what 0.1.0 wrote stays byte-equal
        description="sent for an upsert whose ACL narrows the current one: applied at once "
        "as the intersection with the current ACL, replaced by the upsert's own ACL when "
        "that version is indexed (docs/adr/0007)",
    )


class DocControl(EventBase):
    """Delete or ACL change, fast-pathed from the connector to the indexer."""

    event_type: Literal["doc.control"] = "doc.control"
    action: Literal["delete", "acl"]
    acl: AclChange | None = None

    @model_validator(mode="after")
    def _acl_given(self) -> DocControl:
        if (self.action == "acl") != (self.acl is not None):
            raise ValueError("`acl` is required for action 'acl' and only for it")
        return self


class IndexAction(StrEnum):
    UPSERT = "upsert"
    DELETE = "delete"
    ACL = "acl"


class DocIndexed(EventBase):
    event_type: Literal["doc.indexed"] = "doc.indexed"
    action: IndexAction
    generation: int = Field(ge=0, description="the document's generation after the write")
    chunk_count: int = Field(ge=0)
    acl_groups_before: tuple[str, ...] = ()
    acl_groups_after: tuple[str, ...] = ()
    skipped: bool = Field(default=False, description="stale source_seq: nothing changed")
    source_event_at: AwareDatetime | None = Field(
        default=None, description="occurred_at of the source change, for freshness"
    )


class DeadLetter(_Model):
    """What a stage could not process, with why. Never contains document text in `error`."""

    event_type: Literal["dead_letter"] = "dead_letter"
    schema_version: Literal[1] = 1
    dead_letter_id: str = Field(default_factory=_new_id)
    failed_at: AwareDatetime = Field(default_factory=_now)
    stage: str
    topic: str
    partition: int | None = None
    offset: int | None = None
    key: str | None = None
    original_b64: str = Field(description="the original message value, base64")
    original_headers: dict[str, str] = Field(default_factory=dict)
    error_class: str
    error_message: str = Field(max_length=2000)
    attempts: int = Field(ge=1)
    tenant_id: str | None = None
    document_id: str | None = None


# --------------------------------------------------------------------------- the scanner's seal


def meta_seal_input(meta: DocumentMeta) -> dict[str, Any]:
    """What a meta's seal covers: its text fields (``ragline.scan_seal.digest`` "meta";
    only the scanner mints, ``ragline.scanning.seal``)."""
    return meta.model_dump(mode="json", include=set(TEXT_META_FIELDS))


def document_seal_input(document: ParsedDocument) -> dict[str, Any]:
    """What a document's seal covers: all of it ("document")."""
    return document.model_dump(mode="json", exclude={"scan_seal"})


def _meta_problem(meta: DocumentMeta | None, what: str) -> str | None:
    if meta is None:
        return None
    if meta.scan_seal is None:
        return f"{what}: meta text fields were not sealed by the scanner"
    if meta.scan_seal != digest("meta", meta_seal_input(meta)):
        return f"{what}: meta text fields changed after the scanner sealed them"
    return None


def meta_sealed(meta: DocumentMeta) -> bool:
    """Whether ``meta``'s text fields are what the scanner sealed."""
    return _meta_problem(meta, "") is None


def seal_problem(event: Any) -> str | None:
    """Why ``event`` may not travel after the scanner (or be written to an index row), or
    None. Every text field a post-scanner event carries must be what the scanner emitted:
    ``meta`` (title, uri, version, series, mime type, supersedes, metadata values) and, on
    ``doc.scanned``, the document, sealed (``ragline.scan_seal``) and unchanged since;
    ``doc.quarantined`` may instead carry a meta without any text field. Chunk text is
    the chunker's pure function of a sealed document (``DocScanned.document``). Never
    names a value."""
    if isinstance(event, DocQuarantined):
        meta = event.meta
        if meta is None or (meta.scan_seal is None and not meta.has_text):
            return None
        return _meta_problem(meta, event.event_type)
    if isinstance(event, DocScanned | _ChunksEvent):
        why = _meta_problem(event.meta, event.event_type)
        if why is not None or not isinstance(event, DocScanned):
            return why
        seal = event.document.scan_seal
        if seal is None:
            return "doc.scanned: document was not sealed by the scanner"
        if seal != digest("document", document_seal_input(event.document)):
            return "doc.scanned: document changed after the scanner sealed it"
    return None


def _unsealed_legacy(event: Any) -> bool:
    """An event without any seal: what releases before the seal wrote (read during a
    rolling upgrade; refused at the next publish or index write, docs/scanning.md)."""
    meta = getattr(event, "meta", None)
    document = getattr(event, "document", None)
    return (meta is None or meta.scan_seal is None) and (
        document is None or document.scan_seal is None
    )


# --------------------------------------------------------------------------- registries

EVENT_MODELS: dict[str, type[BaseModel]] = {
    "SourceUpsert": SourceUpsert,
    "SourceDelete": SourceDelete,
    "SourceAclChange": SourceAclChange,
    "DocFetched": DocFetched,
    "DocParsed": DocParsed,
    "DocScanned": DocScanned,
    "DocQuarantined": DocQuarantined,
    "DocChunked": DocChunked,
    "DocEnriched": DocEnriched,
    "DocEmbedded": DocEmbedded,
    "DocControl": DocControl,
    "DocIndexed": DocIndexed,
    "DeadLetter": DeadLetter,
}

_TOPIC_MODELS: dict[str, Any] = {
    Topics.SOURCE_CHANGES: SourceChange,
    Topics.DOC_FETCHED: DocFetched,
    Topics.DOC_PARSED: DocParsed,
    Topics.DOC_SCANNED: DocScanned,
    Topics.DOC_QUARANTINED: DocQuarantined,
    Topics.DOC_CHUNKED: DocChunked,
    Topics.DOC_ENRICHED: DocEnriched,
    Topics.DOC_EMBEDDED: DocEmbedded,
    Topics.DOC_CONTROL: DocControl,
    Topics.DOC_INDEXED: DocIndexed,
}

_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def input_adapter(topic: str) -> TypeAdapter[Any]:
    """The validator for messages on ``topic`` (a discriminated union for source.changes)."""
    topic = lane_of_topic(topic)[0]
    if topic.endswith(".dlq"):
        model: Any = DeadLetter
    else:
        try:
            model = _TOPIC_MODELS[topic]
        except KeyError:
            raise KeyError(f"no event contract for topic {topic!r}") from None
    if topic not in _ADAPTERS:
        _ADAPTERS[topic] = TypeAdapter(model)
    return _ADAPTERS[topic]


def read_event(topic: str, body: bytes | str) -> Any:
    """Validate a consumed message of ``topic`` (a logical name): ``source.changes`` and
    the ``.dlq`` topics strictly, every other internal topic tolerantly (unknown fields
    ignored at any depth, schema versions up to ``MAX_READ_SCHEMA_VERSION``)."""
    topic = lane_of_topic(topic)[0]
    tolerant = topic != Topics.SOURCE_CHANGES and not topic.endswith(".dlq")
    adapter = input_adapter(topic)
    try:
        # strict first: a message of this release (no unknown field, no newer schema
        # version) reads the same either way, and a strict read skips the tolerant one's
        # copy of every nested object (half the validation time of a doc.chunked)
        event = adapter.validate_json(body)
    except ValidationError:
        if not tolerant:
            raise
        event = adapter.validate_json(body, context={TOLERANT: True})
    # a sealed event whose text changed after the scanner is refused here (dead-lettered);
    # an unsealed one of an older release is read, and refused at its next publish
    why = seal_problem(event)
    if why is not None and not _unsealed_legacy(event):
        raise ValueError(why)
    return event
