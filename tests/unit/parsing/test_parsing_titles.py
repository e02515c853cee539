"""Titles from the documents themselves (issue 36, item 5): HTML <title>, DOCX core
properties, PDF metadata, a Markdown H1; the file name only as the fallback; a source's
``meta.title`` still wins. Each format is parsed, chunked with the real chunker, and
projected into the ``documents``/``chunks`` title the citations read."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from types import ModuleType

import pytest
from parsing_helpers import FIXTURES, parse

from ragline.chunking import Chunker, ChunkerSettings
from ragline.events import DocEmbedded
from ragline.hashing import meta_hash
from ragline.indexing.projection import DocumentFields, chunk_rows, document_title, document_values
from ragline.indexing.samples import embedded_event
from ragline.retrieval.hydrate import citation_title
from ragline.text import load_token_counter


def _fixture_builders() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pdf(title: str | None) -> bytes:
    lines = [(20, 72, 700, "Overview", True), (11, 72, 670, "Disks fill up in spring.", False)]
    return bytes(_fixture_builders().build_pdf([lines], title=title))


def _docx(core_title: str | None) -> bytes:
    import docx

    d = docx.Document()
    if core_title is not None:
        d.core_properties.title = core_title
    d.add_heading("Introduction", level=1)
    d.add_paragraph("Core hours are 10:00 to 15:00.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


_HTML = (
    b"<html><head><title>Billing API Reference</title></head><body>"
    b"<h1>Overview</h1><p>Every call needs a key.</p></body></html>"
)

CASES = [
    ("html <title> over the first h1", "api.html", _HTML, "Billing API Reference"),
    (
        "html without <title>: its h1",
        "api.html",
        b"<html><body><h1>Rate limits</h1><p>100/s</p></body></html>",
        "Rate limits",
    ),
    ("docx core properties", "plan.docx", _docx("Quarterly Plan"), "Quarterly Plan"),
    ("docx placeholder core title: its heading", "plan.docx", _docx("Document1"), "Introduction"),
    ("pdf metadata", "report.pdf", _pdf("Q3 Storage Report"), "Q3 Storage Report"),
    (
        "pdf 'Microsoft Word - x.docx': its heading",
        "report.pdf",
        _pdf("Microsoft Word - report.docx"),
        "Overview",
    ),
    ("markdown h1", "guide.md", b"Intro line.\n\n# Storage Guide\n\nText.\n", "Storage Guide"),
    ("plain text without a title: the file name", "notes.txt", b"just some notes here\n", None),
]


@pytest.fixture(scope="module")
def chunker() -> Chunker:
    return Chunker(ChunkerSettings(), load_token_counter())


def _embedded_with(chunks_title: str | None, meta_title: str | None) -> DocEmbedded:
    ev = embedded_event(
        tenant_id="acme", document_id="fs:x", source_seq=1, texts=["a", "b"], title=meta_title
    )
    extra = {"doc_title": chunks_title} if chunks_title else {}
    return ev.model_copy(
        update={"chunks": tuple(c.model_copy(update={"extra": extra}) for c in ev.chunks)}
    )


@pytest.mark.parametrize(("case", "name", "data", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_document_names_itself(
    chunker: Chunker, case: str, name: str, data: bytes, expected: str | None
) -> None:
    parsed = parse(data, name)
    assert parsed.title == expected, case
    chunks = chunker.chunk(parsed, document_id=f"fs:{name}", content_hash="0" * 64)
    carried = chunks[0].extra.get("doc_title")
    assert carried == expected
    title = document_title(_embedded_with(expected, None))
    uri = f"file:///docs/{Path(name).name}"
    assert citation_title(title, uri, f"fs:{name}") == (expected or name)


def test_a_source_title_still_wins() -> None:
    ev = _embedded_with("Billing API Reference", "Billing (from the wiki)")
    assert document_title(ev) == "Billing (from the wiki)"
    assert document_title(_embedded_with(None, None)) is None


def test_rows_carry_the_parsed_title_meta_keeps_the_source_s() -> None:
    fields = DocumentFields(
        acl_groups=("eng",),
        classification="internal",
        acl_seq=1,
        acl_rank=0,
        generation=1,
        revision=1,
        superseded=False,
        superseded_by=None,
    )
    ev = _embedded_with("Billing API Reference", None)
    assert document_values(ev, fields)["title"] == "Billing API Reference"
    assert {r["title"] for r in chunk_rows(ev, fields)} == {"Billing API Reference"}
    assert document_values(ev, fields)["meta_hash"] == meta_hash(ev.meta)  # meta untouched
