"""PDF via pypdf: text per page, headings from font size, paragraphs from line spacing.

Tables are not reconstructed (pypdf gives positioned text, not cells): their text
arrives as paragraphs. Scanned PDFs without a text layer are ``empty_document``
(no OCR here).
"""

from __future__ import annotations

import io
import math
import re
import struct
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, PyPdfError

from ragline.errors import QuarantineError
from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .settings import ParserSettings
from .textutil import clean_text, metadata_title, numbering_depth

__all__ = ["parse_pdf"]

# what pypdf raises on malformed files besides its own errors; caught only around
# pypdf calls, so a bug in this module still surfaces as itself
_PDF_FAILURES: tuple[type[BaseException], ...] = (
    PyPdfError, ValueError, KeyError, TypeError, IndexError, AttributeError, AssertionError,
    RecursionError, zlib.error, struct.error, OSError,
)  # fmt: skip
_HEADING_RATIO = 1.15
_PARAGRAPH_GAP = 1.6  # a vertical gap above this many font sizes starts a paragraph
_MAX_HEADING_CHARS = 150
_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    r"^(page\s*)?\d{1,4}(\s*(of|/)\s*\d{1,4})?$|^[-–]\s*\d{1,4}\s*[-–]$", re.I
)
_DOT_LEADER = re.compile(r"(\.\s?){5,}")  # table-of-contents lines are not headings
_BULLET = re.compile(r"^\s*[•◦▪▫‣⁃●○■□–-]\s+")


# (text, CTM, text matrix, font dict, font size) as pypdf's visitor reports them
_Run = tuple[str, list[float], list[float], Any, float]


@dataclass(kw_only=True)
class _Line:
    page: int
    text: str
    size: float
    y: float
    bold: bool


def _corrupt(exc: BaseException) -> QuarantineError:
    if isinstance(exc, LimitReachedError):  # pypdf caps every stream at 75 MB inflated
        return QuarantineError("decompression_bomb", "a PDF stream inflates past the limit")
    return QuarantineError("corrupt_pdf", f"pypdf could not read the file ({type(exc).__name__})")


def _open(data: bytes, settings: ParserSettings) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")  # owner-password-only PDFs open with ""
            except (DependencyError, NotImplementedError) as exc:
                raise QuarantineError(
                    "encrypted_pdf", f"encryption not supported ({type(exc).__name__})"
                ) from exc
            if not ok:
                raise QuarantineError("encrypted_pdf", "the PDF needs a password to open")
        pages = len(reader.pages)
    except FileNotDecryptedError as exc:
        raise QuarantineError("encrypted_pdf", "the PDF needs a password to open") from exc
    except _PDF_FAILURES as exc:
        raise _corrupt(exc) from exc
    if pages > settings.max_pages:
        raise QuarantineError(
            "too_many_pages", f"{pages} pages, more than {settings.max_pages} (limit max_pages)"
        )
    return reader


def _runs(reader: PdfReader, index: int) -> list[_Run]:
    runs: list[_Run] = []

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        runs.append((text, cm, tm, font, size))

    try:
        reader.pages[index].extract_text(visitor_text=visit)
    except _PDF_FAILURES as exc:
        raise _corrupt(exc) from exc
    return runs


def _page_lines(page: int, runs: list[_Run]) -> list[_Line]:
    """Rebuild the lines pypdf's ``extract_text`` would return, with size/position."""
    lines: list[_Line] = []
    cur: list[str] = []
    meta: tuple[float, float, bool] | None = None

    def close() -> None:
        nonlocal meta
        text = "".join(cur).strip()
        if text and meta is not None:
            lines.append(_Line(page=page, text=text, size=meta[0], y=meta[1], bold=meta[2]))
        cur.clear()
        meta = None

    for text, cm, tm, font, size in runs:
        parts = text.split("\n")
        for k, part in enumerate(parts):
            if k:
                close()
            if part.strip():
                cur.append(part)
                if meta is None:
                    _, _, c, d, e, f = tm
                    # effective size: text matrix and CTM scale the font size
                    scale = math.hypot(c * cm[0] + d * cm[2], c * cm[1] + d * cm[3]) or 1.0
                    y = e * cm[1] + f * cm[3] + cm[5]
                    base = str(font.get("/BaseFont", "")) if hasattr(font, "get") else ""
                    meta = (round(abs(size) * scale, 1), y, "bold" in base.lower())
            elif part and cur:
                cur.append(part)
    close()
    return lines


def _drop_repeated(pages: list[list[_Line]]) -> None:
    """Remove page numbers and running headers/footers (first/last lines repeated on
    most pages)."""
    for lines in pages:
        for ln in [*lines[:2], *lines[-2:]]:
            if _PAGE_NUMBER.match(ln.text) and ln in lines:
                lines.remove(ln)
    if len(pages) < 3:
        return
    counts: Counter[str] = Counter()
    for lines in pages:
        edge = {_DIGITS.sub("#", ln.text) for ln in (lines[:1] + lines[-1:])}
        counts.update(edge)
    repeated = {t for t, n in counts.items() if n >= 0.6 * len(pages)}
    for lines in pages:
        for ln in [*lines[:1], *lines[-1:]]:
            if _DIGITS.sub("#", ln.text) in repeated and ln in lines:
                lines.remove(ln)


def parse_pdf(data: bytes, settings: ParserSettings) -> ParsedDocument:
    reader = _open(data, settings)
    pages = [_page_lines(i + 1, _runs(reader, i)) for i in range(len(reader.pages))]
    _drop_repeated(pages)
    all_lines = [ln for p in pages for ln in p]
    weights: Counter[float] = Counter()
    for ln in all_lines:
        weights[ln.size] += len(ln.text)
    body = weights.most_common(1)[0][0] if weights else 0.0
    heading_sizes = sorted({ln.size for ln in all_lines if ln.size >= body * _HEADING_RATIO},
                           reverse=True)  # fmt: skip
    levels = {s: i + 1 for i, s in enumerate(heading_sizes[:8])}
    bold_level = len(levels) + 1
    # numbering deepens a heading only beyond the shallowest numbering seen at its size:
    # "2.1 Scope" set in the same size as "2. Costs" is one level deeper
    base_depth: dict[float, int] = {}
    for ln in all_lines:
        depth = numbering_depth(ln.text)
        if ln.size in levels and depth is not None and not _DOT_LEADER.search(ln.text):
            base_depth[ln.size] = min(depth, base_depth.get(ln.size, depth))

    def level_of(ln: _Line) -> int | None:
        if len(ln.text) > _MAX_HEADING_CHARS or _DOT_LEADER.search(ln.text):
            return None
        if ln.size in levels:
            depth = numbering_depth(ln.text)
            extra = depth - base_depth[ln.size] if depth is not None else 0
            return min(9, levels[ln.size] + max(0, extra))
        if ln.bold and ln.size >= body and len(ln.text) <= 80 and not ln.text.endswith("."):
            return bold_level
        return None

    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    assembler = _Assembler(b, level_of)
    for lines in pages:
        assembler.page(lines)
    meta_title = None
    try:
        meta_title = reader.metadata.title if reader.metadata else None
    except _PDF_FAILURES:
        meta_title = None
    return b.build(
        format="pdf",
        title=metadata_title(meta_title) or assembler.title,
        page_count=len(reader.pages),
    )


class _Assembler:
    """Groups a page's lines into headings (same level, adjacent), bullet lists and
    paragraphs (a vertical gap above ``_PARAGRAPH_GAP`` font sizes starts a new one)."""

    def __init__(self, builder: BlockBuilder, level_of: Callable[[_Line], int | None]) -> None:
        self.b = builder
        self.level_of = level_of
        self.title: str | None = None
        self.kind = BlockKind.PARAGRAPH
        self.lines: list[str] = []  # paragraph lines, or list items
        self.head: list[str] = []
        self.head_level = 0

    def flush(self, page: int) -> None:
        if self.head:
            text = " ".join(self.head)
            if self.title is None and self.head_level == 1:
                self.title = text
            self.b.heading(clean_text(text), self.head_level, page=page)
            self.head = []
        if self.lines:
            text = "\n".join(self.lines) if self.kind is BlockKind.LIST else _join(self.lines)
            self.b.add(self.kind, clean_text(text), page=page)
            self.lines = []

    def page(self, lines: list[_Line]) -> None:
        prev: _Line | None = None
        for ln in lines:
            close = prev is not None and 0 < prev.y - ln.y <= _PARAGRAPH_GAP * ln.size
            level = self.level_of(ln)
            if level is not None:
                if not (self.head and level == self.head_level and close):
                    self.flush(ln.page)
                self.head.append(ln.text)
                self.head_level = level
            elif _BULLET.match(ln.text):
                if self.head or not close or self.kind is not BlockKind.LIST:
                    self.flush(ln.page)
                self.kind = BlockKind.LIST
                self.lines.append(ln.text)
            elif self.head or not close:
                self.flush(ln.page)
                self.kind = BlockKind.PARAGRAPH
                self.lines.append(ln.text)
            elif self.kind is BlockKind.LIST:  # a wrapped list item
                self.lines[-1] = _join([self.lines[-1], ln.text])
            else:
                self.lines.append(ln.text)
            prev = ln
        if lines:
            self.flush(lines[-1].page)


def _join(lines: list[str]) -> str:
    """Join wrapped lines; a line ending in a hyphen joins without a space."""
    out = lines[0]
    for ln in lines[1:]:
        out = out + ln if out.endswith("-") else out + " " + ln
    return out
