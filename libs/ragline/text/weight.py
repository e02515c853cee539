"""How heavy a parsed document is: one measure for every stage that judges it (issue 18,
"no document delays the others"; docs/lanes.md).

Bytes alone mislead: a 209 KB CSV of 20,000 columns, a 1M-line list and a 5 MB single
line cost very differently per byte. What the stages after parsing spend on a document
grows with the text they read (characters), the pieces they walk (blocks, lines), the
table cells they scan and render one by one, and the longest line: the scanner's line
and phone-number detectors and the chunker's wide headers pay per character of one line,
and a line of tens of thousands of characters is machine data (a wide table row, a
minified file), not prose. All five are counted in one cheap pass over the parsed
document, with no tokenizing.

The parser weighs a document right after parsing it and sends a heavy one that came on
the interactive lane on in the bulk lane (the scanner's interactive lane is never held
by it); the chunker weighs the scanned document again with the same measure (a document
may have come from an older parser) and chunks a heavy one in a process of its own.
Each stage reads its thresholds from its own settings (``HeavyThresholds``, inherited
with the stage's environment prefix) with the same defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field
from pydantic_settings import BaseSettings

from ragline.events import ParsedDocument

__all__ = ["HeavyLimits", "HeavyThresholds", "Weight", "weigh"]


@dataclass(frozen=True, slots=True)
class HeavyLimits:
    """Thresholds of the measure; a document over any one is heavy (0 turns one off)."""

    chars: int = 1_000_000
    blocks: int = 5_000
    lines: int = 50_000
    cells: int = 100_000
    line_chars: int = 30_000


_DEFAULT = HeavyLimits()


class HeavyThresholds(BaseSettings):
    """The measure's thresholds as settings (``<PREFIX>HEAVY_CHARS``...): a stage's
    settings class inherits it, so each stage is configured under its own prefix."""

    heavy_chars: int = Field(
        default=_DEFAULT.chars, ge=0, description="heavy above this many characters; 0 = off"
    )
    heavy_blocks: int = Field(default=_DEFAULT.blocks, ge=0, description="... blocks")
    heavy_lines: int = Field(default=_DEFAULT.lines, ge=0, description="... lines")
    heavy_cells: int = Field(default=_DEFAULT.cells, ge=0, description="... table cells")
    heavy_line_chars: int = Field(
        default=_DEFAULT.line_chars,
        ge=0,
        description="... characters in its longest line (of a block's text or a cell)",
    )

    @property
    def heavy_limits(self) -> HeavyLimits:
        return HeavyLimits(
            chars=self.heavy_chars,
            blocks=self.heavy_blocks,
            lines=self.heavy_lines,
            cells=self.heavy_cells,
            line_chars=self.heavy_line_chars,
        )


@dataclass(frozen=True, slots=True)
class Weight:
    chars: int  # text of every block (a table's rendering included) and the title
    blocks: int
    lines: int  # lines of every block's text
    cells: int  # table cells, header included
    line_chars: int = 0  # the longest line of a block's text, a cell or the title

    def over(self, limits: HeavyLimits) -> tuple[str, ...]:
        """The measures over their threshold (a threshold of 0 is off); empty: light."""
        measures = (
            ("chars", self.chars, limits.chars),
            ("blocks", self.blocks, limits.blocks),
            ("lines", self.lines, limits.lines),
            ("cells", self.cells, limits.cells),
            ("line_chars", self.line_chars, limits.line_chars),
        )
        return tuple(name for name, value, limit in measures if 0 < limit < value)

    def heavy(self, limits: HeavyLimits) -> bool:
        return bool(self.over(limits))


def _longest_line(text: str, longest: int) -> int:
    """``max(longest, the longest line of text)``; a text no longer than ``longest`` can
    not beat it, so only long texts are split (C speed, no per-line Python loop)."""
    if len(text) <= longest:
        return longest
    if "\n" not in text:
        return len(text)
    return max(longest, max(map(len, text.split("\n"))))


def weigh(doc: ParsedDocument) -> Weight:
    """One pass, no tokenizing: lengths, ``str.count`` and, for texts longer than the
    longest line so far, a split on newlines."""
    chars = lines = cells = longest = 0
    for block in doc.blocks:
        text = block.text
        chars += len(text)
        lines += text.count("\n") + 1
        longest = _longest_line(text, longest)
        table = block.table
        if table is not None:
            cells += len(table.header) + sum(map(len, table.rows))
            for row in (table.header, *table.rows):
                if row and max(map(len, row)) > longest:  # else no cell of it can beat it
                    for cell in row:
                        longest = _longest_line(cell, longest)
    if doc.title:
        chars += len(doc.title)
        longest = _longest_line(doc.title, longest)
    return Weight(chars=chars, blocks=len(doc.blocks), lines=lines, cells=cells, line_chars=longest)
