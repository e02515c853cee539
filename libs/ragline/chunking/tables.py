"""Tables: rendered as pipe rows, kept whole when they fit, else split by row groups with
the caption, units and header row repeated in every piece, so no row is ever separated
from its header. A single row too long for a child is spelled out as ``column: value``
pairs and split, each part still led by the header.

The repeated header is bounded: at most ``header_tokens`` word pieces (and
``header_chars`` characters) per child. A table whose header does not fit is cut into
column bands as well as row groups: every child repeats only its band's column names
(a single over-long name is shortened; the full header lives once in the parent's text),
so the output grows with the table's cells, not with rows x columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragline.chunking.boundaries import find_cuts
from ragline.chunking.packer import Packer, PackSpec
from ragline.events import TableData
from ragline.text.tokenizer import TokenCounter

__all__ = ["TablePiece", "group_rows", "render_table", "split_table"]

_MIN_HEADER_TOKENS = 4  # "| |" of one (possibly emptied) column name and a short caption


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


def _row_line(cells: Sequence[str]) -> str:
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


def _names(table: TableData) -> list[str]:
    width = max([len(table.header), *(len(r) for r in table.rows)])
    return list(table.header) + [f"column {i + 1}" for i in range(len(table.header), width)]


def _record(names: Sequence[str], cells: Sequence[str]) -> str:
    return "; ".join(f"{_cell(n)}: {_cell(v)}" for n, v in zip(names, cells, strict=False))


@dataclass(frozen=True, kw_only=True)
class TablePiece:
    text: str
    row_start: int  # index of the first row in the table given to split_table
    row_end: int  # exclusive
    tokens: int
    row_split: bool = False  # one row spread over several pieces
    head: str = ""  # the repeated header this piece starts with (bounded by the budget)
    header: tuple[str, ...] = ()  # column names as shown in ``head``
    col_start: int = 0  # first column of the piece
    col_end: int = 0  # exclusive
    banded: bool = False  # the header was too wide: this piece holds a band of columns


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


def _clip(counter: TokenCounter, text: str, tokens: int, chars: int) -> str:
    """The longest prefix within ``tokens`` pieces and ``chars`` characters."""
    out = counter.truncate(text, max(0, tokens))[: max(0, chars)].rstrip()
    while out and counter.count(out) > tokens:  # a cut inside a word may re-tokenize
        out = out[: len(out) // 2].rstrip()
    return out


@dataclass(frozen=True)
class _Band:
    start: int
    end: int
    shown: tuple[str, ...]  # names as rendered (over-long ones shortened)
    head: str


def _bands(
    names: list[str], pre: str, counter: TokenCounter, tokens: int, chars: int
) -> list[_Band]:
    """Consecutive column ranges whose header line (after ``pre``) fits the budget."""
    lead = pre + "\n" if pre else ""
    room_t = tokens - counter.count(lead) - 1  # the closing "|"
    room_c = chars - len(lead) - 2
    cells = [_cell(n) for n in names]
    costs = counter.count_many([f"| {c} " for c in cells])
    for i, (c, k) in enumerate(zip(cells, costs, strict=True)):
        if k > room_t or len(c) + 3 > room_c:  # one name alone too long: shorten it
            cells[i] = _clip(counter, c, room_t - 1, room_c - 3).replace("\\", "")
            cells[i] = cells[i].replace("|", "")
            costs[i] = counter.count(f"| {cells[i]} ")
    bands: list[_Band] = []
    start = 0
    while start < len(cells):
        end, used_t, used_c = start, 0, 0
        while end < len(cells) and (
            end == start
            or (used_t + costs[end] <= room_t and used_c + len(cells[end]) + 3 <= room_c)
        ):
            used_t += costs[end]
            used_c += len(cells[end]) + 3
            end += 1
        while True:  # exact check; a band of one shortened name always fits
            line = "| " + " | ".join(cells[start:end]) + " |"
            if end == start + 1 or (
                counter.count(lead + line) <= tokens and len(lead + line) <= chars
            ):
                break
            end -= 1
        bands.append(_Band(start, end, tuple(cells[start:end]), lead + line))
        start = end
    return bands


def _band_record(table: TableData, band: _Band) -> Callable[[int], str]:
    def record(i: int) -> str:
        return _record(band.shown, table.rows[i][band.start : band.end])

    return record


def split_table(
    table: TableData,
    counter: TokenCounter,
    *,
    budget: int,
    max_chars: int,
    header_tokens: int | None = None,
    header_chars: int | None = None,
) -> list[TablePiece]:
    """Pieces of at most ``budget`` tokens and ``max_chars`` characters, each repeating
    at most ``header_tokens`` tokens / ``header_chars`` characters of header (default:
    half of the piece)."""
    h_tokens = budget // 2 if header_tokens is None else min(header_tokens, budget // 2)
    h_tokens = max(h_tokens, _MIN_HEADER_TOKENS)
    h_chars = max_chars // 2 if header_chars is None else min(header_chars, max_chars // 2)
    whole = render_table(table)
    # characters first: a table far over the budget is never tokenized whole (a
    # multi-megabyte single-line CSV: tens of seconds per count)
    tokens = counter.count(whole) if len(whole) <= max_chars else budget + 1
    names = tuple(table.header)
    if tokens <= budget and len(whole) <= max_chars:
        width = len(_names(table)) if (table.header or table.rows) else 0
        return [
            TablePiece(
                text=whole,
                row_start=0,
                row_end=len(table.rows),
                tokens=tokens,
                head="\n".join(_head_lines(table)),
                header=names,
                col_end=width,
            )
        ]
    if not table.rows:  # a header (or caption) alone, too long for one child: split as text
        spec = PackSpec(budget=budget, max_chars=max_chars)
        return [
            TablePiece(text=s.text, row_start=0, row_end=0, tokens=s.tokens)
            for s in Packer(counter).pack(whole, find_cuts(whole), spec)
        ]
    head = "\n".join(_head_lines(table))
    all_names = _names(table)
    if len(head) <= h_chars and counter.count(head) <= h_tokens:
        return _pack_rows(
            counter,
            [_row_line(r) for r in table.rows],
            head=head,
            record=lambda i: _record(all_names, table.rows[i]),
            split_lead=head + "\n",
            base=TablePiece(
                text="",
                row_start=0,
                row_end=0,
                tokens=0,
                head=head,
                header=names,
                col_end=len(all_names),
            ),
            budget=budget,
            max_chars=max_chars,
        )
    # too wide to repeat: bands of columns, each with its own (bounded) header line
    pre = _clip(counter, "\n".join(_preamble(table)), h_tokens // 2, h_chars // 2)
    pieces: list[TablePiece] = []
    for band in _bands(all_names, pre, counter, h_tokens, h_chars):
        a, b = band.start, band.end
        pieces.extend(
            _pack_rows(
                counter,
                [_row_line(r[a:b]) for r in table.rows],
                head=band.head,
                record=_band_record(table, band),
                split_lead=pre + "\n" if pre else "",
                base=TablePiece(
                    text="",
                    row_start=0,
                    row_end=0,
                    tokens=0,
                    head=band.head,
                    header=band.shown,
                    col_start=a,
                    col_end=b,
                    banded=True,
                ),
                budget=budget,
                max_chars=max_chars,
            )
        )
    return pieces


def _pack_rows(
    counter: TokenCounter,
    rows: list[str],
    *,
    head: str,
    record: Callable[[int], str],
    split_lead: str,
    base: TablePiece,
    budget: int,
    max_chars: int,
) -> list[TablePiece]:
    """Greedy row groups under ``head``; a row that does not fit alone is split."""
    lead = head + "\n" if head else ""
    lead_tokens = counter.count(lead)
    row_tokens = counter.count_many(rows)
    pieces: list[TablePiece] = []

    def piece(text: str, start: int, end: int, n: int, split: bool = False) -> TablePiece:
        return TablePiece(
            text=text,
            row_start=start,
            row_end=end,
            tokens=n,
            row_split=split,
            head=base.head,
            header=base.header,
            col_start=base.col_start,
            col_end=base.col_end,
            banded=base.banded,
        )

    def split_row(i: int) -> None:
        text = record(i)
        cell_starts = [k + 2 for k in range(len(text) - 1) if text.startswith("; ", k)]
        row_lead = f"{split_lead}Row {i + 1}: "
        spec = PackSpec(budget=budget, max_chars=max_chars, lead_for=lambda _pos: row_lead)
        spans = Packer(counter).pack(text, find_cuts(text, block_starts=cell_starts), spec)
        pieces.extend(piece(s.text, i, i + 1, s.tokens, split=True) for s in spans)

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
            split_row(start)
            start += 1
            continue
        while True:  # exact check (additivity across newlines is expected, not assumed)
            text = lead + "\n".join(rows[start:end])
            n = counter.count(text)
            if (n <= budget and len(text) <= max_chars) or end == start + 1:
                break
            end -= 1
        if n > budget or len(text) > max_chars:
            split_row(start)
            start += 1
            continue
        pieces.append(piece(text, start, end, n))
        start = end
    return pieces
