"""Shared helpers for the parsing tests (imported by module name: unique on purpose)."""

from __future__ import annotations

from pathlib import Path

from ragline.events import DocumentMeta, ParsedDocument
from ragline.parsing import ParserSettings, parse_document

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "parsing"


def parse(
    data: bytes,
    name: str = "doc.txt",
    mime: str | None = None,
    settings: ParserSettings | None = None,
) -> ParsedDocument:
    meta = DocumentMeta(uri=f"file:///docs/{name}", mime_type=mime)
    return parse_document(data, meta, settings or ParserSettings())
