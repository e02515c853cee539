"""The one entry point: raw bytes + source metadata -> ``ParsedDocument`` or quarantine."""

from __future__ import annotations

import json
import posixpath
import re
from urllib.parse import unquote, urlsplit

from ragline.errors import QuarantineError
from ragline.events import DocumentMeta, ParsedDocument

from .code import parse_code
from .detect import Detected, Format, detect_format
from .docx import parse_docx
from .encoding import decode_text
from .html import parse_html
from .limits import check_size
from .markdown import parse_markdown
from .pdf import parse_pdf
from .python_code import PythonSyntaxUnsupported, parse_python
from .settings import ParserSettings
from .tabular import parse_csv
from .text import parse_text
from .textutil import clean_text
from .transcript import looks_like_transcript, parse_transcript

__all__ = ["parse_document"]

_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.I
)


def _filename(meta: DocumentMeta) -> str:
    if meta.uri:
        name = posixpath.basename(unquote(urlsplit(meta.uri).path or meta.uri).replace("\\", "/"))
        if name:
            return name
    return meta.title or "document"


def parse_document(data: bytes, meta: DocumentMeta, settings: ParserSettings) -> ParsedDocument:
    """Parse one document. Raises ``QuarantineError`` for every kind of bad input.

    Pure and synchronous (CPU-bound): callers run it in a worker (``ParseExecutor``).
    """
    check_size(len(data), settings)
    detected = detect_format(data, meta.mime_type, meta.uri)
    if detected.format is Format.PDF:
        return parse_pdf(data, settings)
    if detected.format is Format.DOCX:
        return parse_docx(data, settings)
    if not data.strip():
        raise QuarantineError("empty_document", "the document has no content")
    try:
        return _parse_text_format(data, meta, detected, settings)
    except RecursionError as exc:
        raise QuarantineError(
            "nesting_too_deep", f"the {detected.format} document is nested too deeply to parse"
        ) from exc


def _parse_text_format(
    data: bytes, meta: DocumentMeta, detected: Detected, settings: ParserSettings
) -> ParsedDocument:
    declared = detected.charset
    if declared is None and detected.format is Format.HTML:
        m = _META_CHARSET.search(data[:4096])
        declared = m.group(1).decode("ascii") if m else None
    decoded = decode_text(data, declared)
    text = clean_text(decoded.text)
    enc = decoded.encoding
    if not text.strip():
        raise QuarantineError("empty_document", "the document contains only whitespace")
    fmt = detected.format
    if fmt is Format.MARKDOWN:
        return parse_markdown(text, settings, encoding=enc)
    if fmt is Format.HTML:
        return parse_html(text, settings, encoding=enc)
    if fmt in (Format.CSV, Format.TSV):
        return parse_csv(text, settings, encoding=enc, tsv=fmt is Format.TSV)
    if fmt is Format.TRANSCRIPT:
        return parse_transcript(text, settings, encoding=enc)
    if fmt is Format.JSON:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = None
        if looks_like_transcript(value):
            return parse_transcript(text, settings, encoding=enc)
        return parse_code(text, settings, language="json", filename=_filename(meta), encoding=enc)
    if fmt is Format.PYTHON:
        try:
            return parse_python(text, settings, filename=_filename(meta), encoding=enc)
        except PythonSyntaxUnsupported:
            pass  # still worth indexing: fall back to the structural splitter
        return parse_code(text, settings, language="python", filename=_filename(meta), encoding=enc)
    if fmt is Format.CODE:
        return parse_code(
            text, settings, language=detected.language, filename=_filename(meta), encoding=enc
        )
    return parse_text(text, settings, encoding=enc)
