"""Which parsed documents are heavy for the chunker (issue 18; docs/lanes.md).

Bytes alone mislead: a 169 KB CSV of 20,000 columns, a 1M-line list and a 5 MB single
line cost very differently per byte. The chunker's cost grows with the text it
tokenizes (characters), the pieces it walks (blocks, lines) and the table cells it
renders, all counted in one cheap pass over the parsed document before chunking. A
document over any ``RAGLINE_CHUNKER_HEAVY_*`` threshold is chunked in a process of its
own, within a time bound, and its output goes to the bulk lane; so does an output with
more child chunks than ``heavy_children`` (the embedder's cost), whatever its weight.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragline.chunking.config import ChunkerSettings
from ragline.events import ParsedDocument

__all__ = ["Weight", "weigh"]


@dataclass(frozen=True, slots=True)
class Weight:
    chars: int  # text of every block (a table's rendering included)
    blocks: int
    lines: int  # lines of every block's text
    cells: int  # table cells, header included

    def over(self, settings: ChunkerSettings) -> tuple[str, ...]:
        """The measures over their threshold (a threshold of 0 is off); empty: light."""
        limits = (
            ("chars", self.chars, settings.heavy_chars),
            ("blocks", self.blocks, settings.heavy_blocks),
            ("lines", self.lines, settings.heavy_lines),
            ("cells", self.cells, settings.heavy_cells),
        )
        return tuple(name for name, value, limit in limits if 0 < limit < value)

    def heavy(self, settings: ChunkerSettings) -> bool:
        return bool(self.over(settings))


def weigh(doc: ParsedDocument) -> Weight:
    """One pass, no tokenizing: ``str.count`` and lengths only."""
    chars = lines = cells = 0
    for block in doc.blocks:
        chars += len(block.text)
        lines += block.text.count("\n") + 1
        if block.table is not None:
            cells += len(block.table.header) + sum(len(r) for r in block.table.rows)
    if doc.title:
        chars += len(doc.title)
    return Weight(chars=chars, blocks=len(doc.blocks), lines=lines, cells=cells)
