"""Accumulates blocks for one document: section paths from headings, limits, emptiness."""

from __future__ import annotations

from typing import Any

from ragline.errors import QuarantineError
from ragline.events import Block, BlockKind, ParsedDocument

from .textutil import clean_inline

__all__ = ["BlockBuilder"]

_MAX_SECTION_CHARS = 200


class BlockBuilder:
    """Collects ``Block``s in document order.

    A heading opens a section: it closes every open section of the same or a deeper
    level, and its own ``section_path`` ends with itself, so a heading and the
    paragraphs under it share one path (the chunker never has to split them).
    """

    def __init__(self, *, max_blocks: int, max_chars: int) -> None:
        self._max_blocks = max_blocks
        self._max_chars = max_chars
        self._chars = 0
        self._sections: list[tuple[int, str]] = []
        self.blocks: list[Block] = []

    @property
    def section_path(self) -> tuple[str, ...]:
        return tuple(text for _, text in self._sections)

    def heading(self, text: str, level: int, **fields: Any) -> None:
        """Add a heading block and make it the current section (``level`` clamped to 1-9)."""
        title = clean_inline(text)
        if not title:
            return
        level = max(1, min(9, level))
        while self._sections and self._sections[-1][0] >= level:
            self._sections.pop()
        short = title if len(title) <= _MAX_SECTION_CHARS else title[: _MAX_SECTION_CHARS - 1] + "…"
        self._sections.append((level, short))
        self._append(Block(kind=BlockKind.HEADING, text=title, level=level,
                           section_path=self.section_path, **fields))  # fmt: skip

    def add(self, kind: BlockKind, text: str, **fields: Any) -> None:
        """Add a non-heading block under the current section (unless ``section_path`` is
        given); blank text is dropped."""
        text = text.strip("\n")
        if not text.strip():
            return
        fields.setdefault("section_path", self.section_path)
        self._append(Block(kind=kind, text=text, **fields))

    def _append(self, block: Block) -> None:
        if len(self.blocks) >= self._max_blocks:
            raise QuarantineError(
                "too_many_blocks", f"more than {self._max_blocks} blocks (limit max_blocks)"
            )
        self._chars += len(block.text)
        if self._chars > self._max_chars:
            raise QuarantineError(
                "oversize_document",
                f"more than {self._max_chars} characters of extracted text (limit max_chars)",
            )
        self.blocks.append(block)

    def build(
        self,
        *,
        format: str,
        title: str | None = None,
        page_count: int | None = None,
        encoding: str | None = None,
    ) -> ParsedDocument:
        if not self.blocks:
            raise QuarantineError("empty_document", f"no text found in the {format} document")
        title = clean_inline(title) if title else None
        return ParsedDocument(
            title=title or None,
            format=format,
            blocks=tuple(self.blocks),
            page_count=page_count,
            encoding=encoding,
        )
