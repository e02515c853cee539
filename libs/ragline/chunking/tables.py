"""Tables: rendered as pipe rows, kept whole when they fit, else split by row groups with
the caption, units and header row repeated in every piece, so no row is ever separated
from its header. A single row too long for a child is spelled out as ``column: value``
pairs and split, each part still led by the header.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragline.chunking.boundaries import find_cuts
from ragline.chunking.packer import Packer, PackSpec
from ragline.chunking.tokenizer import TokenCounter
from ragline.events import TableData

__all__ = ["TablePiece", "group_rows", "render_table", "split_table"]


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


def _row_line(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _preamble(table: TableData) -> list[str]:
    lines = []
    if table.caption and table.caption.strip():
        caption = " ".join(table.caption.split())
        labelled = caption.lower().startswith(("table", "tab.", "tabelle", "tableau"))
        lines.append(caption if labelled else f"Table: {caption}")
    if table.units and table.units.strip():
        lines.append(f"Units: {' '.join(table.units.split())}")
    return lines


def _head_lines(table: TableData) -> list[str]:
    lines = _preamble(table)
    if table.header:
        lines.append(_row_line(table.header))
        lines.append("| " + " | ".join("---" for _ in table.header) + " |")
    return lines


def render_table(table: TableData) -> str:
    return "\n".join(_head_lines(table) + [_row_line(r) for r in table.rows])


def _record(table: TableData, row: tuple[str, ...]) -> str:
    names = list(table.header) + [f"column {i + 1}" for i in range(len(table.header), len(row))]
    return "; ".join(f"{_cell(n)}: {_cell(v)}" for n, v in zip(names, row, strict=False))


@dataclass(frozen=True, kw_only=True)
class TablePiece:
    text: str
    row_start: int  # index of the first row in the table given to split_table
    row_end: int  # exclusive
    tokens: int
    row_split: bool = False  # one row spread over several pieces


def _greedy(sizes: list[int], head: int, budget: int) -> list[tuple[int, int]]:
    groups: list[tuple[int, int]] = []
    start, used = 0, head
    for i, t in enumerate(sizes):
        if i > start and used + t > budget:
            groups.append((start, i))
            start, used = i, head
        used += t
    if sizes:
        groups.append((start, len(sizes)))
    return groups


def group_rows(
    table: TableData, counter: TokenCounter, budget: int, *, step: int | None = None
) -> list[tuple[int, int]]:
    """Row ranges whose rendering (header included) fits ``budget``; a lone row may not.

    With ``step`` (the child budget) the ranges are unions of whole child-sized groups,
    so a parent window never ends with a scrap child of one row.
    """
    head = counter.count("\n".join(_head_lines(table)))
    row_tokens = counter.count_many([_row_line(r) for r in table.rows])
    if step is None:
        return _greedy(row_tokens, head, budget)
    steps = _greedy(row_tokens, head, step)
    merged = _greedy([sum(row_tokens[a:b]) for a, b in steps], head, budget)
    return [(steps[a][0], steps[b - 1][1]) for a, b in merged]


def split_table(
    table: TableData, counter: TokenCounter, *, budget: int, max_chars: int
) -> list[TablePiece]:
    """Pieces of at most ``budget`` tokens and ``max_chars`` characters."""
    whole = render_table(table)
    tokens = counter.count(whole)
    if tokens <= budget and len(whole) <= max_chars:
        return [TablePiece(text=whole, row_start=0, row_end=len(table.rows), tokens=tokens)]
    head_lines = _head_lines(table)
    head = "\n".join(head_lines)
    if not table.rows:  # a header (or caption) alone, too long for one child: split as text
        spec = PackSpec(budget=budget, max_chars=max_chars)
        return [
            TablePiece(text=s.text, row_start=0, row_end=0, tokens=s.tokens)
            for s in Packer(counter).pack(whole, find_cuts(whole), spec)
        ]
    record_mode = counter.count(head) > budget // 2 or len(head) > max_chars // 2
    if record_mode:  # too wide to repeat: every row names its columns itself
        head = "\n".join(_preamble(table))
        rows = [_record(table, r) for r in table.rows]
    else:
        rows = [_row_line(r) for r in table.rows]
    lead = head + "\n" if head else ""
    lead_tokens = counter.count(lead)
    row_tokens = counter.count_many(rows)
    pieces: list[TablePiece] = []
    start = 0
    while start < len(rows):
        end, used, chars = start, lead_tokens, len(lead)
        while (
            end < len(rows)
            and used + row_tokens[end] <= budget
            and (chars + len(rows[end]) + 1 <= max_chars)
        ):
            used += row_tokens[end]
            chars += len(rows[end]) + 1
            end += 1
        if end == start:  # this row alone does not fit with the header: split the row
            pieces.extend(_split_row(table, counter, rows[start], start, lead, budget, max_chars))
            start += 1
            continue
        while True:  # exact check (additivity across newlines is expected, not assumed)
            text = lead + "\n".join(rows[start:end])
            n = counter.count(text)
            if (n <= budget and len(text) <= max_chars) or end == start + 1:
                break
            end -= 1
        if n > budget or len(text) > max_chars:
            pieces.extend(_split_row(table, counter, rows[start], start, lead, budget, max_chars))
            start += 1
            continue
        pieces.append(TablePiece(text=text, row_start=start, row_end=end, tokens=n))
        start = end
    return pieces


def _split_row(
    table: TableData,
    counter: TokenCounter,
    row_text: str,
    index: int,
    lead: str,
    budget: int,
    max_chars: int,
) -> list[TablePiece]:
    record = row_text
    if row_text.startswith("| "):
        record = _record(table, table.rows[index])
    cell_starts = [i + 2 for i in range(len(record) - 1) if record.startswith("; ", i)]
    cuts = find_cuts(record, block_starts=cell_starts)
    row_lead = f"{lead}Row {index + 1}: "
    spec = PackSpec(
        budget=budget,
        max_chars=max_chars,
        lead_for=lambda _pos: row_lead,
    )
    spans = Packer(counter).pack(record, cuts, spec)
    return [
        TablePiece(text=s.text, row_start=index, row_end=index + 1, tokens=s.tokens, row_split=True)
        for s in spans
    ]
