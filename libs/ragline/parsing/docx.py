"""DOCX via python-docx: headings by style/outline level, lists, tables, quotes, code.

The zip container is checked (``limits.inspect_zip``) before python-docx opens it.
Page headers/footers, footnotes, comments and text boxes are not extracted; DOCX has
no stable pages or lines, so blocks carry neither.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from typing import Any

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.opc.exceptions import OpcError
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree

from ragline.errors import QuarantineError
from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .limits import inspect_zip
from .settings import ParserSettings
from .tables import CAPTION_RE, make_table, render_table
from .textutil import clean_text, metadata_title

__all__ = ["parse_docx"]

# python-docx and lxml raise these on malformed packages; caught only around
# python-docx calls
_DOCX_FAILURES: tuple[type[BaseException], ...] = (
    OpcError, KeyError, ValueError, AttributeError, IndexError, etree.LxmlError,
    zipfile.BadZipFile, OSError, EOFError,
)  # fmt: skip
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.I)
_QUOTE_STYLES = frozenset({"quote", "intense quote", "block text"})
_CODE_STYLE = re.compile(r"code|preformatted|source|macro text", re.I)


def _outline_level(p: Paragraph, style: Any) -> int | None:
    """``w:outlineLvl`` of the paragraph or its style (0-based in the XML), 9 = body."""
    for ppr in (p._p.pPr, getattr(style, "element", None)):
        if ppr is None:
            continue
        node = ppr if ppr.tag == qn("w:pPr") else ppr.find(qn("w:pPr"))
        lvl = node.find(qn("w:outlineLvl")) if node is not None else None
        if lvl is not None:
            val = int(lvl.get(qn("w:val"), "9"))
            return val + 1 if val < 9 else None
    return None


def _list_level(p: Paragraph, style: str) -> int | None:
    """Nesting depth (0-based) if the paragraph is a list item, else None."""
    ppr = p._p.pPr
    num = ppr.find(qn("w:numPr")) if ppr is not None else None
    if num is not None:
        ilvl = num.find(qn("w:ilvl"))
        return int(ilvl.get(qn("w:val"), "0")) if ilvl is not None else 0
    if style.lower().startswith("list"):
        m = re.search(r"(\d)$", style)
        return int(m.group(1)) - 1 if m else 0
    return None


def _items(doc: Any) -> Iterator[Paragraph | Table]:
    """Body paragraphs and tables in document order (content controls unwrapped)."""

    def walk(parent: Any) -> Iterator[Paragraph | Table]:
        for child in parent.iterchildren():
            if child.tag == qn("w:p"):
                yield Paragraph(child, doc)
            elif child.tag == qn("w:tbl"):
                yield Table(child, doc)
            elif child.tag == qn("w:sdt"):
                content = child.find(qn("w:sdtContent"))
                if content is not None:
                    yield from walk(content)

    yield from walk(doc.element.body)


def _table_rows(table: Table) -> tuple[list[str], list[list[str]]]:
    """First row is the header (Word's repeated header rows are always at the top)."""
    rows = [[clean_text(c.text) for c in row.cells] for row in table.rows]
    return (rows[0], rows[1:]) if rows else ([], [])


class _DocxWalker:
    def __init__(self, b: BlockBuilder, document: Any) -> None:
        self.b = b
        # python-docx resolves `paragraph.style` by scanning every style: once per id here
        self.styles = {s.style_id: s for s in document.styles}
        self.default_style = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
        self.list_lines: list[str] = []
        self.list_counter: dict[int, int] = {}
        self.code_lines: list[str] = []
        self.caption: str | None = None  # a caption paragraph waiting for its table
        self.table_rows: tuple[list[str], list[list[str]]] | None = None  # waiting for a caption
        self.table_caption: str | None = None
        self.title: str | None = None
        self.shift = 0  # after a Title paragraph, "Heading 1" sits one level below it

    def flush(self) -> None:
        if self.table_rows is not None:
            header, rows = self.table_rows
            if header or rows:
                data = make_table(header, rows, self.table_caption)
                self.b.add(BlockKind.TABLE, render_table(data), table=data)
            self.table_rows, self.table_caption = None, None
        if self.list_lines:
            self.b.add(BlockKind.LIST, "\n".join(self.list_lines))
            self.list_lines, self.list_counter = [], {}
        if self.code_lines:
            self.b.add(BlockKind.CODE, "\n".join(self.code_lines))
            self.code_lines = []

    def table(self, table: Table) -> None:
        caption, self.caption = self.caption, None
        self.flush()
        self.table_rows, self.table_caption = _table_rows(table), caption

    def end(self) -> None:
        if self.caption is not None:
            self.flush()
            self.b.add(BlockKind.PARAGRAPH, self.caption)
            self.caption = None
        self.flush()

    def paragraph(self, p: Paragraph) -> None:
        style_obj = self.styles.get(p._p.style, self.default_style)
        style = (style_obj.name if style_obj is not None else "") or ""
        text = clean_text(p.text)
        lower = style.lower()
        if self.table_rows is not None and self.table_caption is None and lower == "caption":
            self.table_caption = text.strip()  # caption placed below its table
            self.flush()
            return
        if self.caption is not None:  # a caption not followed by a table is a paragraph
            self.flush()
            self.b.add(BlockKind.PARAGRAPH, self.caption)
            self.caption = None
        if not text.strip():
            return
        m = _HEADING_STYLE.match(style)
        level = 1 if lower == "title" else int(m.group(1)) if m else _outline_level(p, style_obj)
        if level is not None:
            self.flush()
            if lower == "title":
                self.shift = 1
            else:
                level += self.shift
            if self.title is None and (lower == "title" or level == 1):
                self.title = text
            self.b.heading(text, level)
            return
        depth = _list_level(p, style)
        if depth is not None:
            if self.code_lines:
                self.flush()
            n = self.list_counter[depth] = self.list_counter.get(depth, 0) + 1
            marker = f"{n}." if "number" in lower else "-"
            self.list_lines.append("  " * depth + f"{marker} {text.strip()}")
            return
        if _CODE_STYLE.search(style):
            if self.list_lines:
                self.flush()
            self.code_lines.append(text.rstrip())
            return
        self.flush()
        if lower == "caption" or CAPTION_RE.match(text):
            self.caption = text.strip()
        elif lower in _QUOTE_STYLES:
            self.b.add(BlockKind.QUOTE, text)
        else:
            self.b.add(BlockKind.PARAGRAPH, text)


def parse_docx(data: bytes, settings: ParserSettings) -> ParsedDocument:
    if data.startswith(b"\xd0\xcf\x11\xe0"):
        raise QuarantineError(
            "encrypted_docx", "OLE2 container: a password-protected DOCX or a legacy .doc"
        )
    inspect_zip(data, settings, what="docx")
    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    try:
        document = docx.Document(io.BytesIO(data))
        walker = _DocxWalker(b, document)
        core_title = document.core_properties.title
        for item in _items(document):
            if isinstance(item, Table):
                walker.table(item)
            else:
                walker.paragraph(item)
    except _DOCX_FAILURES as exc:
        raise QuarantineError(
            "corrupt_docx", f"python-docx could not read the document ({type(exc).__name__})"
        ) from exc
    walker.end()
    return b.build(format="docx", title=metadata_title(core_title) or walker.title)
