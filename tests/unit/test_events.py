"""Event contracts: round trips and precise rejection of bad payloads."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter, ValidationError

from ragline.events import (
    ALL_TOPICS,
    Block,
    BlockKind,
    Chunk,
    ChunkLevel,
    DocControl,
    DocEmbedded,
    DocumentMeta,
    SourceAclChange,
    SourceChange,
    SourceDelete,
    SourceUpsert,
    Topics,
    dlq_topic,
    input_adapter,
    read_event,
)
from ragline.hashing import chunk_id

SOURCE = TypeAdapter(SourceChange)


def _upsert(**kw: object) -> SourceUpsert:
    base: dict[str, object] = {
        "tenant_id": "acme",
        "document_id": "wiki:page/1",
        "source_seq": 3,
        "meta": DocumentMeta(title="T", acl_groups=("eng", "all", "eng")),
        "content_text": "hello",
    }
    base.update(kw)
    return SourceUpsert(**base)  # type: ignore[arg-type]


def test_round_trip_through_the_topic_union() -> None:
    ev = _upsert()
    back = SOURCE.validate_json(ev.model_dump_json())
    assert back == ev
    assert isinstance(back, SourceUpsert)
    assert back.meta.acl_groups == ("all", "eng")  # sorted, unique
    assert back.schema_version == 1
    assert back.source == "wiki"


@pytest.mark.parametrize(
    "event",
    [
        SourceDelete(tenant_id="acme", document_id="wiki:x", source_seq=1),
        SourceAclChange(tenant_id="acme", document_id="wiki:x", source_seq=1, acl_groups=("a",)),
    ],
)
def test_every_source_change_round_trips(event: object) -> None:
    assert SOURCE.validate_json(event.model_dump_json()) == event  # type: ignore[attr-defined]


def test_unknown_event_type_is_rejected_precisely() -> None:
    payload = json.loads(_upsert().model_dump_json())
    payload["event_type"] = "source.frobnicate"
    with pytest.raises(ValidationError) as info:
        SOURCE.validate_python(payload)
    assert "union_tag_invalid" in str(info.value)


def test_unknown_field_is_rejected() -> None:
    payload = json.loads(_upsert().model_dump_json())
    payload["surprise"] = 1
    with pytest.raises(ValidationError) as info:
        SOURCE.validate_python(payload)
    assert info.value.errors()[0]["loc"] == ("source.upsert", "surprise")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tenant_id", "Acme Corp"),
        ("document_id", "no-colon"),
        ("source_seq", -1),
        ("content_hash", "abc"),
        ("schema_version", 2),
    ],
)
def test_bad_envelope_fields_are_rejected(field: str, value: object) -> None:
    payload = json.loads(_upsert().model_dump_json())
    payload[field] = value
    with pytest.raises(ValidationError) as info:
        SOURCE.validate_python(payload)
    assert any(field in err["loc"] for err in info.value.errors())


def test_upsert_needs_exactly_one_content() -> None:
    with pytest.raises(ValidationError, match="exactly one of"):
        _upsert(content_text=None)
    with pytest.raises(ValidationError, match="exactly one of"):
        _upsert(content_b64="aGk=")


def test_expiry_before_effective_is_rejected() -> None:
    with pytest.raises(ValidationError, match="expiry_date is before"):
        DocumentMeta(effective_date="2025-02-01", expiry_date="2025-01-01")  # type: ignore[arg-type]


def test_control_acl_needs_acl() -> None:
    with pytest.raises(ValidationError, match="`acl` is required"):
        DocControl(tenant_id="a", document_id="s:x", source_seq=1, action="acl")


def test_table_block_needs_table_data() -> None:
    with pytest.raises(ValidationError, match="needs `table`"):
        Block(kind=BlockKind.TABLE, text="a|b")


def _chunk(embedding: tuple[float, ...] | None) -> Chunk:
    return Chunk(
        chunk_id=chunk_id("s:x", "h", "v1", 0),
        level=ChunkLevel.CHILD,
        ordinal=0,
        text="t",
        content_type="text",
        token_count=1,
        strategy="structure",
        strategy_version="1",
        embedding=embedding,
    )


def test_embedded_children_need_vectors_of_the_declared_dim() -> None:
    common = {
        "tenant_id": "a",
        "document_id": "s:x",
        "source_seq": 1,
        "content_hash": "0" * 64,
        "meta": DocumentMeta(),
        "embedding_model": "m",
        "embedding_revision": "r",
        "embedding_dim": 3,
    }
    DocEmbedded(chunks=(_chunk((0.1, 0.2, 0.3)),), **common)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="has 2 dims"):
        DocEmbedded(chunks=(_chunk((0.1, 0.2)),), **common)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="has no embedding"):
        DocEmbedded(chunks=(_chunk(None),), **common)  # type: ignore[arg-type]


def test_every_topic_has_a_contract_and_a_dlq() -> None:
    for topic in Topics:
        assert input_adapter(topic) is not None
        assert dlq_topic(topic) in ALL_TOPICS
    assert input_adapter("doc.parsed.dlq") is not None
    with pytest.raises(KeyError, match="no event contract"):
        input_adapter("nope")


def test_derived_envelope_is_deterministic_and_carries_the_source_fields() -> None:
    from ragline.events import DocIndexed, IndexAction, derive_event_id

    src = _upsert(traceparent="00-" + "a" * 32 + "-" + "b" * 16 + "-01")
    env = src.derived("doc.indexed")
    assert env == src.derived("doc.indexed")  # a redelivered input yields the same output
    scope = f"{src.tenant_id}\0{src.document_id}\0{src.event_id}"
    assert env["event_id"] == derive_event_id(scope, "doc.indexed") != src.event_id
    assert src.derived("parser")["event_id"] != env["event_id"]  # each step its own id
    # the same id on another tenant's or document's event never derives the same id
    other = src.model_copy(update={"tenant_id": "other"})
    assert other.derived("doc.indexed")["event_id"] != env["event_id"]
    assert len(env["event_id"]) == 32
    out = DocIndexed(**env, action=IndexAction.UPSERT, generation=1, chunk_count=0)
    assert (out.tenant_id, out.document_id, out.source_seq, out.traceparent) == (
        src.tenant_id,
        src.document_id,
        src.source_seq,
        src.traceparent,
    )
    assert out.occurred_at == src.occurred_at and out.content_hash == src.content_hash


def test_the_reset_generation_is_carried_and_written_only_when_not_zero() -> None:
    """lifetest F14: ``seq_epoch`` travels with every derived event; at 0 the event is
    byte-for-byte what releases before it wrote (like ``priority``)."""
    ev = SourceDelete(tenant_id="acme", document_id="wiki:a", source_seq=3)
    assert "seq_epoch" not in ev.model_dump_json()
    assert ev.derived("x")["seq_epoch"] == 0
    later = ev.model_copy(update={"seq_epoch": 2})
    assert later.derived("x")["seq_epoch"] == 2 and '"seq_epoch":2' in later.model_dump_json()
    assert read_event(Topics.SOURCE_CHANGES, later.model_dump_json().encode()).seq_epoch == 2
