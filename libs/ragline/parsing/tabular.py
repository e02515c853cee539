"""CSV and TSV as tables: delimiter sniffed, first row is the header, cut into row groups."""

from __future__ import annotations

import csv
import io

from ragline.errors import QuarantineError
from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .settings import ParserSettings
from .tables import make_table, render_table

__all__ = ["parse_csv"]

_DELIMITERS = ",;\t|"
_SNIFF_BYTES = 64 * 1024
_FIELD_LIMIT = 10 * 1024 * 1024


def _dialect(text: str, default: str) -> type[csv.Dialect] | csv.Dialect:
    if default == "\t" and "\t" in text.split("\n", 1)[0]:
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(text[:_SNIFF_BYTES], delimiters=_DELIMITERS)
    except csv.Error:

        class _Default(csv.excel):
            delimiter = default

        return _Default


def parse_csv(
    text: str, settings: ParserSettings, *, encoding: str | None, tsv: bool = False
) -> ParsedDocument:
    """One TABLE block per ``csv_rows_per_block`` rows, each repeating the header.

    Line ranges are source lines (quoted fields may span several). Ragged rows are
    padded to the widest row.
    """
    dialect = _dialect(text, "\t" if tsv else ",")
    csv.field_size_limit(_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    header: list[str] | None = None
    group: list[list[str]] = []
    first_line = 1
    last_line = 0

    def flush() -> None:
        if header is not None and (group or not b.blocks):
            table = make_table(header, group)
            b.add(BlockKind.TABLE, render_table(table), table=table,
                  line_start=first_line, line_end=max(first_line, last_line))  # fmt: skip
        group.clear()

    try:
        for row in reader:
            if not any(cell.strip() for cell in row):
                last_line = reader.line_num
                continue
            if header is None:
                header = row
                first_line = last_line + 1
            else:
                if not group and b.blocks:
                    first_line = last_line + 1
                group.append(row)
                if len(group) >= settings.csv_rows_per_block:
                    last_line = reader.line_num
                    flush()
                    continue
            last_line = reader.line_num
    except csv.Error as exc:
        raise QuarantineError(
            "invalid_csv", f"unreadable delimited text near line {reader.line_num} ({exc})"
        ) from exc
    flush()
    return b.build(format="csv", encoding=encoding)
