"""Enricher: every chunk gets an Enrichment; provenance separates source from inferred."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from ragline.enrichment import Enricher, classify_content
from ragline.events import Chunk, ChunkLevel, DocChunked, DocumentMeta

_HASH = "e" * 64


def _event(meta: DocumentMeta, *chunks: Chunk) -> DocChunked:
    return DocChunked(
        tenant_id="acme",
        document_id="fs:guide",
        content_hash=_HASH,
        source_seq=3,
        meta=meta,
        chunks=chunks,
    )


def test_authoritative_fields_come_from_the_source(
    enricher: Enricher, make_chunk: Callable[..., Chunk]
) -> None:
    meta = DocumentMeta(
        title="Admin Guide",
        uri="file:///guide.md",
        version="4.2",
        effective_date=date(2024, 3, 1),
        acl_groups=("eng",),
        source_type="filesystem",
    )
    text = "After the upgrade to v4.2 the Acme Gateway returned HTTP 503 until March 3, 2024."
    (out,) = enricher.enrich(_event(meta, make_chunk(text, page_start=2)))
    e = out.enrichment
    assert e is not None
    assert e.contextual_header == "Admin Guide > Guide > Install (v4.2, effective 2024-03-01)"
    assert e.language == "en" and e.content_type == "text"
    assert e.entities["error_code"] == ("HTTP 503",)
    assert e.entities["version"] == ("v4.2",)
    assert e.entities["product"] == ("Acme Gateway",)
    assert e.dates == ("2024-03-03",)
    p = e.provenance
    for field in (
        "title",
        "uri",
        "version",
        "effective_date",
        "acl_groups",
        "classification",
        "trust",
        "source_type",
        "section_path",
        "contextual_header",
        "page",
    ):
        assert p[field] == "source", field
    for field in ("language", "content_type", "entities", "dates"):
        assert p[field] == "inferred", field
    assert "expiry_date" not in p and "lines" not in p  # not given: not claimed
    assert out.model_dump(exclude={"enrichment"}) == make_chunk(text, page_start=2).model_dump(
        exclude={"enrichment"}
    )


def test_source_language_wins_and_is_marked_source(
    enricher: Enricher, make_chunk: Callable[..., Chunk]
) -> None:
    meta = DocumentMeta(title="Leitfaden", language="de")
    (out,) = enricher.enrich(_event(meta, make_chunk("The service restarts at night.")))
    assert out.enrichment is not None
    assert out.enrichment.language == "de" and out.enrichment.provenance["language"] == "source"


def test_short_chunks_take_the_document_language(
    enricher: Enricher, make_chunk: Callable[..., Chunk]
) -> None:
    german = "Der Dienst wird jeden Sonntag neu gestartet und die Wartung dauert nicht lange."
    chunks = [make_chunk(german, 0), make_chunk("Siehe oben.", 1), make_chunk("| 1 | 2 |", 2)]
    out = enricher.enrich(_event(DocumentMeta(), *chunks))
    assert [c.enrichment.language for c in out if c.enrichment] == ["de", "de", "de"]


def test_title_fallbacks_are_inferred(enricher: Enricher, make_chunk: Callable[..., Chunk]) -> None:
    parsed = make_chunk("Text here for the reader.", extra={"doc_title": "Parsed Title"})
    (out,) = enricher.enrich(_event(DocumentMeta(uri="file:///x/notes.txt"), parsed))
    assert out.enrichment is not None
    assert out.enrichment.contextual_header.startswith("Parsed Title > ")
    assert out.enrichment.provenance["title"] == "inferred"
    (out,) = enricher.enrich(
        _event(DocumentMeta(uri="file:///x/notes.txt"), make_chunk("Text here for the reader."))
    )
    assert out.enrichment is not None
    assert out.enrichment.contextual_header.startswith("notes.txt > ")


def test_parents_are_enriched_too_and_code_has_no_products(
    enricher: Enricher, make_chunk: Callable[..., Chunk]
) -> None:
    parent = make_chunk(
        "class RetryPolicy:\n    raise TimeoutError('x')",
        0,
        level=ChunkLevel.PARENT,
        content_type="code",
    )
    (out,) = enricher.enrich(_event(DocumentMeta(), parent))
    assert out.enrichment is not None
    assert "product" not in out.enrichment.entities
    assert out.enrichment.entities["error_code"] == ("TimeoutError",)


def test_content_type_refinement(make_chunk: Callable[..., Chunk]) -> None:
    steps = make_chunk("1. Download it.\n2. Install it.\n3. Start it.", content_type="list")
    faq = make_chunk("Q: How do I reset it?\nA: Hold the button.")
    assert classify_content(steps) == "procedure"
    assert classify_content(faq) == "faq"
    assert classify_content(make_chunk("Plain words.", content_type="table")) == "table"
    assert classify_content(make_chunk("Plain words.")) == "text"
