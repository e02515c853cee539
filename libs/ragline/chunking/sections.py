"""Sections (runs of blocks sharing a section path) and their parent windows.

A section that fits ``parent_max_tokens`` is one parent; a larger one is cut into windows
at block boundaries, and a single block larger than a window is first cut into pieces
(text at paragraph/sentence cuts, code at blank lines, tables by row groups). Children
are later packed inside one window, so every child lies inside its parent and nothing
ever crosses a section boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ragline.chunking.boundaries import find_cuts
from ragline.chunking.packer import Packer, PackSpec
from ragline.chunking.tables import group_rows, render_table
from ragline.events import Block, BlockKind, ParsedDocument, TableData
from ragline.text.tokenizer import TokenCounter

__all__ = ["Piece", "Section", "Window", "sections_of", "windows_of"]

TEXT_KINDS = frozenset({BlockKind.PARAGRAPH, BlockKind.LIST, BlockKind.QUOTE})


@dataclass(frozen=True, kw_only=True)
class Piece:
    """A block, or the part of one that starts at ``offset`` of its text."""

    index: int  # the block's index in the document
    block: Block
    text: str  # stripped; for tables unused (rendered from ``table``)
    offset: int = 0  # where ``text`` starts in ``block.text``
    continued: bool = False  # not the beginning of the block (a later piece of a split)
    table: TableData | None = None
    row_offset: int = 0

    @property
    def kind(self) -> BlockKind:
        return self.block.kind


@dataclass(frozen=True, kw_only=True)
class Section:
    path: tuple[str, ...]
    pieces: tuple[Piece, ...]


@dataclass(frozen=True, kw_only=True)
class Window:
    path: tuple[str, ...]
    pieces: tuple[Piece, ...]
    number: int  # 0-based within its section
    of: int  # windows in the section
    tokens: int  # of the joined text (counts add up across the whitespace separators)


def turn_prefix(block: Block, continued: bool = False) -> str:
    parts = []
    if block.timestamp:
        parts.append(f"[{block.timestamp}]")
    if block.speaker:
        parts.append(block.speaker + (" (cont.)" if continued else ""))
    elif continued:
        parts.append("(cont.)")
    return (" ".join(parts) + ": ") if parts else ""


def render_piece(piece: Piece) -> str:
    if piece.table is not None:
        return render_table(piece.table)
    if piece.kind is BlockKind.TURN:
        return turn_prefix(piece.block, piece.continued) + piece.text
    return piece.text


def join_pieces(pieces: tuple[Piece, ...]) -> str:
    out: list[str] = []
    for i, p in enumerate(pieces):
        if i:
            both_turns = p.kind is BlockKind.TURN and pieces[i - 1].kind is BlockKind.TURN
            out.append("\n" if both_turns else "\n\n")
        out.append(render_piece(p))
    return "".join(out)


def _has_content(block: Block) -> bool:
    if block.kind is BlockKind.HEADING:
        return False  # headings live on as section_path and the contextual header
    if block.kind is BlockKind.TABLE:
        return block.table is not None and bool(block.table.header or block.table.rows)
    return bool(block.text.strip())


def sections_of(doc: ParsedDocument) -> list[Section]:
    sections: list[Section] = []
    current: list[Piece] = []
    path: tuple[str, ...] | None = None
    for i, block in enumerate(doc.blocks):
        if block.kind is BlockKind.HEADING or block.section_path != path:
            if current and path is not None:
                sections.append(Section(path=path, pieces=tuple(current)))
            current, path = [], block.section_path
        if _has_content(block):
            text = block.text.strip()
            offset = len(block.text) - len(block.text.lstrip())
            current.append(Piece(index=i, block=block, text=text, offset=offset, table=block.table))
    if current and path is not None:
        sections.append(Section(path=path, pieces=tuple(current)))
    return sections


def _split_piece(piece: Piece, counter: TokenCounter, budget: int, step: int) -> list[Piece]:
    if piece.table is not None:
        t = piece.table
        if not t.rows:  # a header alone longer than a window: one piece, split by its children
            return [piece]
        return [
            replace(
                piece,
                table=TableData(
                    header=t.header, rows=t.rows[a:b], caption=t.caption, units=t.units
                ),
                row_offset=piece.row_offset + a,
            )
            for a, b in group_rows(t, counter, budget, step=step)
        ]
    text = piece.text
    code = piece.kind is BlockKind.CODE
    cuts = find_cuts(text, sentences=not code, line_starts=code)
    spec = PackSpec(budget=budget, max_chars=10**9, keep_indent=code)
    spans = Packer(counter).pack(text, cuts, spec)
    return [
        replace(
            piece,
            text=text[s.start : s.end],
            offset=piece.offset + s.start,
            continued=piece.continued or s.start > 0,
        )
        for s in spans
    ]


def windows_of(
    section: Section, counter: TokenCounter, parent_max: int, child_max: int
) -> list[Window]:
    sized: list[tuple[Piece, int]] = []
    counts = counter.count_many([render_piece(p) for p in section.pieces])
    for piece, n in zip(section.pieces, counts, strict=True):
        if n <= parent_max:
            sized.append((piece, n))
            continue
        k = -(-n // parent_max)  # balanced parts, not a full one and a scrap
        budget = min(parent_max, (-(-n // k)) * 11 // 10)
        parts = _split_piece(piece, counter, budget, child_max)
        sized.extend(zip(parts, counter.count_many([render_piece(p) for p in parts]), strict=True))
    total = sum(n for _, n in sized)
    n_windows = max(1, -(-total // parent_max))
    target = -(-total // n_windows)  # balanced: no tiny last window when avoidable
    groups: list[list[Piece]] = [[]]
    totals = [0]
    for piece, n in sized:
        if groups[-1] and (totals[-1] + n > parent_max or totals[-1] >= target):
            groups.append([])
            totals.append(0)
        groups[-1].append(piece)
        totals[-1] += n
    return [
        Window(path=section.path, pieces=tuple(g), number=k, of=len(groups), tokens=t)
        for k, (g, t) in enumerate(zip(groups, totals, strict=True))
    ]
