"""Tables for every format: one normalized ``TableData`` and a readable text rendering."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragline.events import TableData

from .textutil import clean_inline

__all__ = ["CAPTION_RE", "make_table", "render_table"]

# "Table 3: ...", "Tab. 2 - ...", "Table: ..."
CAPTION_RE = re.compile(r"^\s*(table|tab\.)\s*[\dIVXivx.]*\s*[:.\-–—]", re.I)
_UNITS_RE = re.compile(
    r"\((?:in|units?:?|all figures in|values in)\s+([^()]{1,30})\)|\bunits?:\s*([^\s,;.)]{1,30})",
    re.I,
)
_MAX_COLUMNS = 512


def _units(caption: str | None) -> str | None:
    if not caption:
        return None
    m = _UNITS_RE.search(caption)
    if not m:
        return None
    return (m.group(1) or m.group(2)).strip() or None


def make_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], caption: str | None = None
) -> TableData:
    """Rectangular table: cells whitespace-collapsed, short rows padded, header named.

    Columns past ``_MAX_COLUMNS`` are folded into the last one so nothing is lost.
    """
    width = min(_MAX_COLUMNS, max([len(header), *(len(r) for r in rows)], default=0))

    def fit(cells: Sequence[str]) -> tuple[str, ...]:
        out = [clean_inline(c) for c in cells]
        if len(out) > width:
            out = [*out[: width - 1], " ".join(out[width - 1 :])]
        return tuple(out + [""] * (width - len(out)))

    caption = clean_inline(caption) if caption else None
    return TableData(
        header=fit(header),
        rows=tuple(fit(r) for r in rows),
        caption=caption or None,
        units=_units(caption),
    )


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def render_table(table: TableData) -> str:
    """Markdown-style rendering so BM25 and the embedder see the cell text in row order."""
    lines = [table.caption] if table.caption else []
    lines.append(_row(table.header))
    lines.append("| " + " | ".join("---" for _ in table.header) + " |")
    lines.extend(_row(r) for r in table.rows)
    return "\n".join(lines)
