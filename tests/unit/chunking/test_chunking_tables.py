"""Tables: whole when they fit, else row groups with the header repeated; rows never split
from their header."""

from __future__ import annotations

from itertools import pairwise

from chunking_docs import DOC_ID, HASH, doc, table

from ragline.chunking import Chunker, ChunkerSettings
from ragline.chunking.tables import group_rows, render_table, split_table
from ragline.events import Block, BlockKind, ChunkLevel, TableData
from ragline.text import TokenCounter

HEADER_LINE = "| col0 | col1 | col2 |"


def test_a_small_table_stays_whole(chunker: Chunker) -> None:
    block = table(4)
    chunks = chunker.chunk(doc(block), document_id=DOC_ID, content_hash=HASH)
    children = [c for c in chunks if c.level is ChunkLevel.CHILD]
    assert len(children) == 1
    assert block.table is not None
    assert children[0].text == render_table(block.table)
    assert children[0].extra["table_header"] == ["col0", "col1", "col2"]
    assert (children[0].extra["row_start"], children[0].extra["row_end"]) == (1, 4)
    assert children[0].content_type == "table" and children[0].strategy == "table-rows"


def test_a_large_table_repeats_caption_units_and_header_in_every_piece(
    chunker: Chunker, counter: TokenCounter
) -> None:
    block = table(120)
    chunks = chunker.chunk(doc(block), document_id=DOC_ID, content_hash=HASH)
    children = [c for c in chunks if c.level is ChunkLevel.CHILD]
    assert len(children) > 3
    seen: list[int] = []
    for c in children:
        lines = c.text.split("\n")
        assert lines[:4] == ["Table: Inventory", "Units: GiB", HEADER_LINE, "| --- | --- | --- |"]
        assert c.token_count == counter.count(c.text) <= 200
        rows = [int(line.split("|")[1].strip()[1:].split("-")[0]) for line in lines[4:]]
        assert rows == list(range(int(c.extra["row_start"]) - 1, int(c.extra["row_end"])))  # type: ignore[arg-type]
        seen.extend(rows)
    assert seen == list(range(120))  # every row exactly once, in order


def test_parent_windows_of_a_huge_table_end_on_child_groups(chunker: Chunker) -> None:
    chunks = chunker.chunk(doc(table(400)), document_id=DOC_ID, content_hash=HASH)
    parents = [c for c in chunks if c.level is ChunkLevel.PARENT]
    assert len(parents) >= 2
    for p in parents:
        kids = [c for c in chunks if c.parent_id == p.chunk_id]
        assert all(k.token_count >= 120 for k in kids[:-1])
        assert p.text.startswith("Table: Inventory\nUnits: GiB\n" + HEADER_LINE)


def test_a_row_too_long_for_a_child_is_split_with_its_header(counter: TokenCounter) -> None:
    long_cell = " ".join(f"word{i}" for i in range(400))
    t = TableData(header=("id", "notes"), rows=(("r1", "short"), ("r2", long_cell)))
    pieces = split_table(t, counter, budget=100, max_chars=2000)
    split = [p for p in pieces if p.row_split]
    assert len(split) >= 2
    for p in split:
        assert p.text.startswith("| id | notes |\n| --- | --- |\nRow 2: ")
        assert p.tokens <= 100 and p.row_start == 1 and p.row_end == 2
    assert "notes: word0" in split[0].text


def test_a_table_too_wide_to_repeat_is_cut_into_column_bands(counter: TokenCounter) -> None:
    header = tuple(f"measurement_column_{i}" for i in range(30))
    t = TableData(header=header, rows=tuple(tuple(str(i * j) for j in range(30)) for i in range(6)))
    pieces = split_table(t, counter, budget=120, max_chars=2000)
    assert len(pieces) >= 2 and all(p.banded for p in pieces)
    for p in pieces:  # each band repeats only its own column names, within the budget
        assert p.tokens == counter.count(p.text) <= 120
        assert p.text.startswith(p.head + "\n") and counter.count(p.head) <= 60
        assert p.head == "| " + " | ".join(header[p.col_start : p.col_end]) + " |"
        lines = p.text.split("\n")[1:]
        assert lines == [
            "| " + " | ".join(str(r * c) for c in range(p.col_start, p.col_end)) + " |"
            for r in range(p.row_start, p.row_end)
        ]
    bands = sorted({(p.col_start, p.col_end) for p in pieces})
    assert bands[0][0] == 0 and bands[-1][1] == 30
    assert all(x[1] == y[0] for x, y in pairwise(bands))


def test_an_over_long_column_name_is_shortened_in_children_kept_whole_in_the_parent(
    chunker: Chunker, counter: TokenCounter
) -> None:
    long_name = " ".join(f"name{i}" for i in range(500))
    header = ("id", long_name, "value")
    rows = tuple((str(i), f"x{i}", f"v{i}") for i in range(50))
    block = Block(kind=BlockKind.TABLE, text="", section_path=("Doc",),
                  table=TableData(header=header, rows=rows, caption="Wide " * 300))  # fmt: skip
    chunks = chunker.chunk(doc(block), document_id=DOC_ID, content_hash=HASH)
    children = [c for c in chunks if c.level is ChunkLevel.CHILD]
    parents = {c.chunk_id: c for c in chunks if c.level is ChunkLevel.PARENT}
    full_header = "| " + " | ".join(header) + " |"
    for c in children:
        assert c.extra["column_start"] and c.extra["table_columns"] == 3
        assert "table_caption" not in c.extra  # the caption lives in the parent, once
        shown = c.extra["table_header"]
        assert isinstance(shown, list)
        assert counter.count("| " + " | ".join(shown) + " |") <= 100
        assert parents[str(c.parent_id)].text.count(full_header) == 1
    covered = sorted(
        (r, col)
        for c in children
        for r in range(int(c.extra["row_start"]) - 1, int(c.extra["row_end"]))  # type: ignore[arg-type]
        for col in range(int(c.extra["column_start"]) - 1, int(c.extra["column_end"]))  # type: ignore[arg-type]
    )
    assert covered == [(r, col) for r in range(50) for col in range(3)]  # each cell once


def test_cells_with_pipes_and_newlines_are_escaped(counter: TokenCounter) -> None:
    t = TableData(header=("a|b",), rows=(("line1\nline2",),))
    assert render_table(t) == "| a\\|b |\n| --- |\n| line1 line2 |"


def test_group_rows_with_step_unions_whole_child_groups(counter: TokenCounter) -> None:
    block = table(200)
    assert block.table is not None
    steps = group_rows(block.table, counter, 200)
    merged = group_rows(block.table, counter, 900, step=200)
    boundaries = {a for a, _ in steps}
    assert all(a in boundaries for a, _ in merged)
    assert merged[0][0] == 0 and merged[-1][1] == 200


def test_a_header_only_table_too_long_for_a_child_is_still_kept(counter: TokenCounter) -> None:
    t = TableData(header=tuple(f"column number {i}" for i in range(12)), rows=())
    pieces = split_table(t, counter, budget=24, max_chars=300)
    assert len(pieces) >= 2 and all(p.tokens <= 24 for p in pieces)
    joined = " ".join(p.text for p in pieces)
    assert all(f"column number {i}" in joined for i in range(12))


def test_a_header_only_table_longer_than_a_parent_window_is_kept(counter: TokenCounter) -> None:
    """Used to raise IndexError: the window split found no row groups and left no piece."""
    t = TableData(header=tuple(f"column number {i}" for i in range(40)), rows=())
    block = Block(kind=BlockKind.TABLE, text="", section_path=("A",), table=t)
    conf = ChunkerSettings(child_max_tokens=24, parent_max_tokens=64)
    chunks = Chunker(conf, counter).chunk(doc(block), document_id=DOC_ID, content_hash=HASH)
    children = [c for c in chunks if c.level is ChunkLevel.CHILD]
    joined = " ".join(c.text for c in children)
    assert all(f"column number {i}" in joined for i in range(40))
    assert all(c.token_count <= 24 for c in children)
