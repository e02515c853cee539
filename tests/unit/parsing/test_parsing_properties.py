"""Property tests: arbitrary input never escapes as anything but QuarantineError, and
plain text / markdown paragraphs never lose a non-whitespace character."""

from __future__ import annotations

import contextlib
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parsing_helpers import parse

from ragline.errors import QuarantineError
from ragline.events import BlockKind, ParsedDocument
from ragline.parsing.textutil import clean_text

_FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_TEXT_NAMES = [
    "a.txt",
    "a.md",
    "a.html",
    "a.csv",
    "a.tsv",
    "a.json",
    "a.transcript.json",
    "a.py",
    "a.go",
    "a.yaml",
    "noext",
]
_ALL_NAMES = [*_TEXT_NAMES, "a.pdf", "a.docx"]


def _nonws(s: str) -> str:
    return re.sub(r"\s+", "", s)


def _check_invariants(doc: ParsedDocument, source_lines: int | None) -> None:
    assert doc.blocks
    for block in doc.blocks:
        assert block.text.strip()
        if block.line_start is not None:
            assert block.line_end is not None
            assert 1 <= block.line_start <= block.line_end
            if source_lines is not None:
                assert block.line_end <= source_lines
        if block.kind is BlockKind.HEADING:
            assert block.section_path and block.level is not None
        if block.kind is BlockKind.TABLE:
            assert block.table is not None
            assert all(len(r) == len(block.table.header) for r in block.table.rows)


@_FAST
@given(text=st.text(max_size=400), name=st.sampled_from(_TEXT_NAMES))
def test_arbitrary_text_only_ever_quarantines(text: str, name: str) -> None:
    data = text.encode("utf-8")
    try:
        doc = parse(data, name)
    except QuarantineError as exc:
        assert re.fullmatch(r"[a-z0-9_]{1,64}", exc.reason_code)
        return
    _check_invariants(doc, None)


@_FAST
@given(data=st.binary(max_size=600), name=st.sampled_from(_ALL_NAMES))
def test_arbitrary_bytes_only_ever_quarantine(data: bytes, name: str) -> None:
    try:
        doc = parse(data, name)
    except QuarantineError:
        return
    _check_invariants(doc, None)


@_FAST
@given(
    prefix=st.sampled_from([b"%PDF-1.4\n", b"PK\x03\x04", b"\xef\xbb\xbf", b"\xff\xfe", b"[{"]),
    tail=st.binary(max_size=400),
)
def test_magic_prefixed_garbage_only_ever_quarantines(prefix: bytes, tail: bytes) -> None:
    with contextlib.suppress(QuarantineError):
        parse(prefix + tail, "upload")


_PRINTABLE = st.characters(blacklist_categories=("Cs", "Cc"))
_TEXT_LINE = st.one_of(
    st.text(alphabet=st.one_of(_PRINTABLE, st.just(" ")), max_size=60),
    st.sampled_from(["", "", "  ", "\t", "1. Intro", "NOTES ON C#", "- item", "2.1 Scope"]),
)
# lines with blank ones in between, so documents have many paragraphs and headings
_TEXTISH = st.lists(_TEXT_LINE, max_size=30).map("\n".join)


@_FAST
@given(text=_TEXTISH)
def test_plain_text_loses_no_character(text: str) -> None:
    try:
        doc = parse(text.encode("utf-8"), "notes.txt")
    except QuarantineError as exc:
        assert exc.reason_code == "empty_document"
        assert not text.strip()
        return
    _check_invariants(doc, len(clean_text(text).split("\n")))
    assert _nonws("".join(b.text for b in doc.blocks)) == _nonws(clean_text(text))


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéßø"
_WORD = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(_LETTERS),
    st.text(alphabet=_LETTERS + "0123456789,.;:!?'()", max_size=10),
)
_LINE = st.lists(_WORD, min_size=1, max_size=8).map(" ".join)
_PARAGRAPH = st.lists(_LINE, min_size=1, max_size=3).map("\n".join)
_HEADING = st.tuples(st.integers(1, 4), _LINE).map(lambda t: "#" * t[0] + " " + t[1])
_MD_DOC = st.lists(st.one_of(_PARAGRAPH, _HEADING), min_size=1, max_size=8).map("\n\n".join)


@_FAST
@given(source=_MD_DOC)
def test_markdown_paragraphs_lose_no_word(source: str) -> None:
    doc = parse(source.encode("utf-8"), "doc.md")
    expected = [w for w in source.split() if not re.fullmatch(r"#{1,6}", w)]
    assert " ".join(b.text for b in doc.blocks).split() == expected
    _check_invariants(doc, len(source.split("\n")))
    # every paragraph's section path is the chain of headings above it
    for b in doc.blocks:
        if b.kind is BlockKind.PARAGRAPH and b.line_start is not None:
            above = [
                h
                for h in doc.blocks
                if h.kind is BlockKind.HEADING
                and h.line_start is not None
                and h.line_start < b.line_start
            ]
            assert b.section_path == (above[-1].section_path if above else ())


@_FAST
@given(text=st.text(max_size=300), name=st.sampled_from(_TEXT_NAMES))
def test_parsing_is_deterministic(text: str, name: str) -> None:
    data = text.encode("utf-8")
    outcomes = []
    for _ in range(2):
        try:
            outcomes.append(parse(data, name))
        except QuarantineError as exc:
            outcomes.append(exc.reason_code)  # type: ignore[arg-type]
    assert outcomes[0] == outcomes[1]
