"""Format detection: MIME type, then extension, then content sniffing."""

from __future__ import annotations

import mimetypes

import pytest
from parsing_helpers import FIXTURES

from ragline.errors import QuarantineError
from ragline.parsing import Format, detect_format


@pytest.mark.parametrize(
    ("data", "mime", "uri", "fmt", "lang"),
    [
        (b"x", "text/markdown; charset=utf-8", None, Format.MARKDOWN, None),
        (b"x", "text/plain", "file:///a/README.md", Format.MARKDOWN, None),
        (b"x", None, "https://h/x/page.HTM?x=1", Format.HTML, None),
        (b"x", "application/octet-stream", "s3://b/k/data.tsv", Format.TSV, None),
        (b"x", "video/mp2t", "file:///src/app.ts", Format.CODE, "typescript"),
        (b"x", "application/rls-services+xml", "file:///src/lib.rs", Format.CODE, "rust"),
        (b"x", None, "file:///calls/c1.transcript.json", Format.TRANSCRIPT, None),
        (b"x", "application/json", "file:///calls/c1.json", Format.JSON, None),
        (b"x", None, "file:///repo/Dockerfile", Format.CODE, "dockerfile"),
        (b"x", None, "file:///repo/tool.py", Format.PYTHON, "python"),
        (b"%PDF-1.7\n...", None, None, Format.PDF, None),
        (b"<!DOCTYPE html><html><body>x</body></html>", None, "upload", Format.HTML, None),
        (b'[{"speaker": "a", "text": "b"}]', "text/plain", None, Format.JSON, None),
        (b"#!/usr/bin/env python3\nprint(1)\n", None, "bin/tool", Format.PYTHON, None),
        (b"# Title\n\n- a\n- b\n", None, "notes", Format.MARKDOWN, None),
        (b"Just some words.\n", None, "notes", Format.TEXT, None),
    ],
)
def test_detect(
    data: bytes, mime: str | None, uri: str | None, fmt: Format, lang: str | None
) -> None:
    detected = detect_format(data, mime, uri)
    assert detected.format is fmt
    if lang is not None:
        assert detected.language == lang


def test_declared_charset_is_kept() -> None:
    assert detect_format(b"x", "text/plain; charset=ISO-8859-1", "a.txt").charset == "ISO-8859-1"


def test_sniffed_docx() -> None:
    data = (FIXTURES / "handbook.docx").read_bytes()
    assert detect_format(data, None, "upload").format is Format.DOCX


def test_what_pythons_mimetypes_guesses_for_fixtures_still_detects_right() -> None:
    # the connector fills mime_type with mimetypes.guess_type(); it must not mislead us
    expected = {
        "md": Format.MARKDOWN,
        "html": Format.HTML,
        "txt": Format.TEXT,
        "pdf": Format.PDF,
        "docx": Format.DOCX,
        "csv": Format.CSV,
        "tsv": Format.TSV,
        "py": Format.PYTHON,
        "go": Format.CODE,
        "json": Format.JSON,
    }
    for path in FIXTURES.iterdir():
        ext = path.name.rsplit(".", 1)[-1]
        if ext not in expected or path.name.endswith(".expected.json"):
            continue
        mime, _ = mimetypes.guess_type(path.name)
        assert detect_format(b"", mime, path.as_uri()).format is expected[ext], path.name


def test_unsupported_mime_without_known_extension() -> None:
    with pytest.raises(QuarantineError):
        detect_format(b"GIF89a", "image/gif", "file:///x/upload")
