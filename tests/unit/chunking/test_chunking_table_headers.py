"""The repeated table header is bounded (issue 18): for any table shape every child
repeats at most the header budget, every cell lands in exactly one child, each child is
traceable to its header, and a 20k/100k-column CSV gives an event linear in its size.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragline.chunking import Chunker, ChunkerSettings
from ragline.chunking.stage import chunk_event
from ragline.chunking.tables import split_table
from ragline.events import (
    ChunkLevel,
    DocScanned,
    DocumentMeta,
    FindingsSummary,
    TableData,
)
from ragline.parsing.settings import ParserSettings
from ragline.parsing.tabular import parse_csv
from ragline.scanning.seal import as_scanned
from ragline.text import TokenCounter

_word = st.text(alphabet="abcXYZé0123456789日本", min_size=1, max_size=10)
_giant = st.text(alphabet="QUJD", min_size=101, max_size=400)  # one [UNK], many characters
_name = st.one_of(
    _word, _word, _word, st.lists(_word, min_size=2, max_size=40).map(" ".join), _giant
)
_value = st.one_of(st.just(""), _word, st.lists(_word, min_size=1, max_size=60).map(" ".join))


def _squash(text: str) -> str:
    return "".join(text.split())


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


@st.composite
def _tables(draw: st.DrawFn) -> TableData:
    width = draw(st.integers(1, 60))
    header = tuple(draw(st.lists(_name, min_size=width, max_size=width)))
    rows = draw(
        st.lists(
            st.lists(_value, min_size=width, max_size=width).map(tuple), min_size=1, max_size=12
        )
    )
    caption = draw(
        st.one_of(st.none(), _word, st.lists(_word, min_size=20, max_size=80).map(" ".join))
    )
    return TableData(header=header, rows=tuple(rows), caption=caption)


@settings(
    max_examples=int(os.environ.get("RAGLINE_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    t=_tables(),
    budget=st.sampled_from([24, 40, 64, 120, 200]),
    max_chars=st.sampled_from([300, 800, 2000]),
    header_tokens=st.integers(4, 100),
)
def test_any_table_shape_repeats_a_bounded_header_and_places_each_cell_once(
    counter: TokenCounter, t: TableData, budget: int, max_chars: int, header_tokens: int
) -> None:
    pieces = split_table(
        t, counter, budget=budget, max_chars=max_chars, header_tokens=header_tokens
    )
    h_tokens, h_chars = min(header_tokens, budget // 2), max_chars // 2
    units: dict[tuple[int, int], list[str]] = {}  # (row, first column) -> texts
    for p in pieces:
        assert p.tokens == counter.count(p.text) <= budget and len(p.text) <= max_chars
        if len(pieces) > 1:  # a repeated header: never more than the budget
            assert counter.count(p.head) <= h_tokens and len(p.head) <= h_chars
        if not p.row_split:
            assert p.text.startswith(p.head)
            if p.banded:  # traceable: the shown names are the band's names (maybe shortened)
                assert len(p.header) == p.col_end - p.col_start
                for shown, full in zip(p.header, t.header[p.col_start : p.col_end], strict=True):
                    assert _squash(full.replace("|", "")).startswith(_squash(shown))
            else:
                assert p.header == t.header
        body = p.text
        if p.row_split:  # drop the lead: the (bounded) preamble/header and "Row N: "
            label = f"Row {p.row_start + 1}: "
            assert label in body
            body = body[body.index(label) + len(label) :]
        for r in range(p.row_start, p.row_end):
            units.setdefault((r, p.col_start), []).append(body)
    width = len(t.header)
    starts = sorted({p.col_start for p in pieces})
    ends = sorted({p.col_end for p in pieces})
    assert starts[0] == 0 and ends[-1] == width and starts[1:] == ends[:-1]  # bands tile
    assert sorted(units) == [(r, c) for r in range(len(t.rows)) for c in starts]
    bands = dict(zip(starts, ends, strict=True))
    for (r, a), texts in units.items():  # each cell once: in one child (or one split row)
        cells = [_squash(_cell(v)) for v in t.rows[r][a : bands[a]]]
        joined = _squash("".join(texts))
        pos = 0
        for c in cells:
            found = joined.find(c, pos)
            assert found >= 0
            pos = found + len(c)
        split = [p for p in pieces if p.row_split and p.row_start == r and p.col_start == a]
        assert len(texts) == 1 or len(split) == len(texts)


def _csv(columns: int, rows: int) -> str:
    lines = [",".join(f"c{i}" for i in range(columns))]
    lines += [",".join(str((r * 7 + i) % 10) for i in range(columns)) for r in range(rows)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("columns", "rows"), [(20_000, 1), (20_000, 3), (100_000, 1)])
def test_a_very_wide_csv_gives_an_event_linear_in_its_size(
    chunker: Chunker, columns: int, rows: int
) -> None:
    """20k columns x 1 row (169 KB) used to give a 62 MB doc.chunked event: every child
    carried the whole header in ``extra.table_header``."""
    text = _csv(columns, rows)
    event = as_scanned(
        DocScanned(
            tenant_id="acme",
            document_id="fs:wide.csv",
            content_hash="e" * 64,
            source_seq=1,
            meta=DocumentMeta(title="wide", uri="file:///wide.csv"),
            document=parse_csv(text, ParserSettings(), encoding="utf-8"),
            findings=FindingsSummary(),
            scanner_version="1",
        )
    )
    out = chunk_event(event, chunker)
    size = len(out.model_dump_json())
    assert size <= 6 * len(text)  # 20k x 1: about 2x (was 370x)
    children = [c for c in out.chunks if c.level is ChunkLevel.CHILD]
    extra = sum(len(str(c.extra)) for c in children)
    assert extra <= len(text)
    limit = ChunkerSettings().table_header_tokens
    for c in children:
        assert isinstance(c.extra["table_header"], list)
        assert len(" | ".join(c.extra["table_header"])) <= ChunkerSettings().child_max_chars // 2
        assert c.token_count <= 200 and limit == 100
