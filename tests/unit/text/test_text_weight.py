"""The one heaviness measure (ragline.text.weight): what it counts, its thresholds, hostile
shapes, and that the parser and the chunker judge with the same rule (issue 18)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.chunking import ChunkerSettings
from ragline.events import Block, BlockKind, DocumentMeta, ParsedDocument, TableData
from ragline.parsing import ParserSettings, parse_document
from ragline.text.weight import HeavyLimits, Weight, weigh


def _para(text: str) -> Block:
    return Block(kind=BlockKind.PARAGRAPH, text=text)


def _table(header: tuple[str, ...], rows: tuple[tuple[str, ...], ...], text: str = "") -> Block:
    return Block(kind=BlockKind.TABLE, text=text, table=TableData(header=header, rows=rows))


def _doc(*blocks: Block, title: str | None = None) -> ParsedDocument:
    return ParsedDocument(format="markdown", title=title, blocks=blocks)


def _wide_csv(columns: int) -> bytes:
    """The freshness benchmark's wide CSV: a header and two rows of ``columns`` columns."""
    header = ",".join(f"c{i}" for i in range(columns))
    row = ",".join(str(i % 10) for i in range(columns))
    return f"{header}\n{row}\n{row}\n".encode()


# ----------------------------------------------------------------------------- the rule


def test_weight_counts_characters_blocks_lines_cells_and_the_longest_line() -> None:
    d = _doc(
        _para("one\ntwo\nthree"), _table(("a", "bb", "c"), (("x", "yyyyyyy", "z"),)), title="T"
    )
    w = weigh(d)
    assert w.blocks == 2
    assert w.chars == len("one\ntwo\nthree") + len("T")  # the table block's text is ""
    assert w.lines == 3 + 1
    assert w.cells == 3 + 3  # header included
    assert w.line_chars == len("yyyyyyy")  # a cell's line counts like a block's


def test_each_measure_has_its_own_threshold_and_zero_is_off() -> None:
    limits = HeavyLimits(chars=10, blocks=2, lines=3, cells=4, line_chars=5)
    at = Weight(chars=10, blocks=2, lines=3, cells=4, line_chars=5)
    assert at.over(limits) == ()  # "above", not "at"
    above = Weight(chars=11, blocks=3, lines=4, cells=5, line_chars=6)
    assert above.over(limits) == ("chars", "blocks", "lines", "cells", "line_chars")
    off = HeavyLimits(chars=0, blocks=0, lines=0, cells=0, line_chars=0)
    assert not Weight(
        chars=10**12, blocks=10**9, lines=10**12, cells=10**12, line_chars=10**12
    ).heavy(off)


def test_the_parser_and_the_chunker_judge_by_the_same_thresholds() -> None:
    assert ParserSettings().heavy_limits == ChunkerSettings().heavy_limits == HeavyLimits()
    # each under its own prefix: RAGLINE_PARSER_HEAVY_CELLS, RAGLINE_CHUNKER_HEAVY_CELLS
    assert ParserSettings(heavy_cells=7).heavy_limits.cells == 7
    assert ChunkerSettings(heavy_line_chars=9).heavy_limits.line_chars == 9


def test_the_settings_come_from_each_stages_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGLINE_PARSER_HEAVY_LINE_CHARS", "123")
    monkeypatch.setenv("RAGLINE_CHUNKER_HEAVY_CHARS", "456")
    assert ParserSettings().heavy_limits.line_chars == 123
    assert ParserSettings().heavy_limits.chars == HeavyLimits().chars
    assert ChunkerSettings().heavy_limits.chars == 456
    assert ChunkerSettings().heavy_limits.line_chars == HeavyLimits().line_chars


def test_a_small_but_wide_csv_is_heavy_by_its_longest_line() -> None:
    """The document the measure was missing: 20,000 columns in 209 KB (under every byte
    threshold; the parser folds columns past 512 into the last one, a 134 KB cell)."""
    data = _wide_csv(20_000)
    assert len(data) < 250_000
    doc = parse_document(data, DocumentMeta(mime_type="text/csv"), ParserSettings())
    w = weigh(doc)
    assert w.over(HeavyLimits()) == ("line_chars",)
    assert w.cells < HeavyLimits().cells and w.chars < HeavyLimits().chars
    # an ordinary CSV stays light
    small = parse_document(_wide_csv(40), DocumentMeta(mime_type="text/csv"), ParserSettings())
    assert weigh(small).over(HeavyLimits()) == ()


# ----------------------------------------------------------------------------- hostile


def test_hostile_shapes_are_weighed_without_tokenizing() -> None:
    limits = HeavyLimits()
    wide = _table(tuple(f"c{i}" for i in range(100_000)), (("1",) * 100_000,))  # 100k columns
    assert weigh(_doc(wide)).over(limits) == ("cells",)
    line = _para("v," * (10 * 2**20))  # a 20 MB single line
    w = weigh(_doc(line))
    assert w.over(limits) == ("chars", "line_chars")
    assert w.lines == 1 and w.line_chars == 20 * 2**20
    odd = _para("a\x00b\ud800c\udfff\u200b\n" * 60_000)  # NUL, lone surrogates, zero-width
    w = weigh(_doc(odd))
    assert w.over(limits) == ("lines",) and w.lines == 60_001 and w.line_chars == 7
    zero_width = _para("\u200b\u200c\u200d\ufeff" * 10_000)  # invisible, but characters
    assert weigh(_doc(zero_width)).over(limits) == ("line_chars",)
    many = _doc(*(_para("x") for _ in range(5_001)))
    assert weigh(many).over(limits) == ("blocks",)
    nul_cell = _table(("h",), (("\x00" * 40_000,),))  # one huge cell, no newline
    assert weigh(_doc(nul_cell)).over(limits) == ("line_chars",)
    assert weigh(_doc(_para(""))).over(limits) == ()
    assert weigh(_doc(title="\u200b" * 40_000)).line_chars == 40_000
    # an ordinary document is light
    prose = " ".join(f"word{i}" for i in range(2_000)) + ".\n"
    assert weigh(_doc(_para(prose * 5), _table(("a", "b"), (("1", "2"),) * 50))).over(limits) == ()


_TEXT = st.text(alphabet="ab\n\x00\ud800\u200b", max_size=40)


@settings(max_examples=120, deadline=None)
@given(
    texts=st.lists(_TEXT, min_size=1, max_size=5),
    cells=st.lists(st.lists(_TEXT, min_size=1, max_size=3), max_size=3),
    title=st.none() | _TEXT,
)
def test_weight_matches_a_naive_count(
    texts: list[str], cells: list[list[str]], title: str | None
) -> None:
    """Additive over blocks, and the longest line is what splitting every text finds."""
    width = max((len(r) for r in cells), default=0)
    rows = tuple(tuple(r + [""] * (width - len(r))) for r in cells)
    blocks = [_para(t) for t in texts]
    if width:
        blocks.append(_table(rows[0], rows[1:]))
    d = _doc(*blocks, title=title)
    w = weigh(d)
    every = [*texts, *(c for r in rows for c in r), *([title] if title else [])]
    assert w.line_chars == max((len(ln) for t in every for ln in t.split("\n")), default=0)
    assert w.chars == sum(len(t) for t in texts) + len(title or "")
    assert w.lines == sum(t.count("\n") + 1 for t in texts) + (1 if width else 0)
    assert w.blocks == len(blocks)
    assert w.cells == sum(len(r) for r in rows)
