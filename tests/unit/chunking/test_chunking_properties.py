"""Property tests: chunking is deterministic, loses no text, never exceeds the token or
character limit, never crosses a section, and never separates a table row from its header.
"""

from __future__ import annotations

import os
import re
from itertools import groupby

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragline.chunking import Chunker, ChunkerSettings
from ragline.chunking.sections import turn_prefix
from ragline.chunking.tables import render_table
from ragline.events import Block, BlockKind, Chunk, ChunkLevel, ParsedDocument, TableData
from ragline.text import TokenCounter

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéüß0123456789日本語"
_word = st.text(alphabet=_LETTERS, min_size=1, max_size=12)
_giant = st.text(alphabet="QUJD", min_size=101, max_size=700)  # one [UNK] piece, many chars
_sentence = st.tuples(
    st.lists(
        st.one_of(_word, _word, _word, _word, _word, _word, _word, _word, _word, _giant),
        min_size=1,
        max_size=25,
    ),
    st.sampled_from([". ", "! ", "? ", ", ", " ", "。", ".\n", "\n\n"]),
).map(lambda t: " ".join(t[0]) + t[1])
_text = st.lists(_sentence, min_size=1, max_size=12).map("".join)
_paths = st.sampled_from([("A",), ("A", "B"), ("C",), ()])
_speakers = st.sampled_from(["Ann", "Bob"])
_CONT = re.compile(r"(?:\[\d\d:\d\d\] )?(?:Ann|Bob) \(cont\.\): ")


@st.composite
def _block(draw: st.DrawFn) -> Block:
    kind = draw(st.sampled_from(list(BlockKind)))
    path = draw(_paths)
    if kind is BlockKind.TABLE:
        width = draw(st.integers(1, 5))
        cell = st.lists(_word, min_size=1, max_size=4).map(" ".join)
        rows = draw(st.lists(st.tuples(*[cell] * width), min_size=0, max_size=40))
        header = draw(st.tuples(*[_word] * width))
        caption = draw(st.one_of(st.none(), _word))
        return Block(
            kind=kind,
            text="",
            section_path=path,
            table=TableData(header=header, rows=tuple(rows), caption=caption),
        )
    if kind is BlockKind.TURN:
        minute = draw(st.integers(0, 59))
        return Block(
            kind=kind,
            text=draw(_text),
            section_path=path,
            speaker=draw(_speakers),
            timestamp=f"{minute:02d}:00",
        )
    if kind is BlockKind.CODE:
        lines = draw(
            st.lists(
                st.tuples(st.integers(0, 3), _text.map(lambda t: t.replace("\n", " "))),
                min_size=1,
                max_size=30,
            )
        )
        text = "\n".join("    " * ind + line for ind, line in lines)
        return Block(
            kind=kind,
            text=text,
            section_path=path,
            symbol="m.f",
            signature=draw(st.one_of(st.none(), st.just("def f(x):"))),
        )
    return Block(kind=kind, text=draw(_text), section_path=path)


_docs = st.lists(_block(), min_size=0, max_size=14).map(
    lambda blocks: ParsedDocument(format="test", blocks=tuple(blocks))
)


@st.composite
def _settings(draw: st.DrawFn) -> ChunkerSettings:
    child = draw(st.sampled_from([24, 40, 64, 120, 200]))
    return ChunkerSettings(
        child_max_tokens=child,
        header_budget_tokens=min(40, 254 - child),
        overlap_ratio=draw(st.sampled_from([0.0, 0.1, 0.15, 0.2])),
        parent_max_tokens=max(64, child * draw(st.integers(1, 6))),
        child_max_chars=draw(st.sampled_from([300, 800, 2000])),
    )


_SETTINGS = settings(  # RAGLINE_HYPOTHESIS_EXAMPLES=1000 for a deeper run
    max_examples=int(os.environ.get("RAGLINE_HYPOTHESIS_EXAMPLES", "50")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _chunk(counter: TokenCounter, conf: ChunkerSettings, doc: ParsedDocument) -> list[Chunk]:
    return Chunker(conf, counter).chunk(
        doc, document_id="t:doc", content_hash="c" * 64, file_path="x.py"
    )


def _sections(doc: ParsedDocument) -> list[list[Block]]:
    """Runs of content blocks sharing a section path (a heading starts a new run)."""
    runs: list[list[Block]] = []
    path: object = object()
    for b in doc.blocks:
        if b.kind is BlockKind.HEADING or b.section_path != path:
            runs.append([])
            path = b.section_path
        if b.kind is not BlockKind.HEADING:
            runs[-1].append(b)
    return [r for r in runs if r]


def _expected(block: Block) -> str:
    if block.kind is BlockKind.TURN:
        return turn_prefix(block) + block.text.strip()
    return block.text


def _squash(text: str) -> str:
    return "".join(text.split())


@_SETTINGS
@given(doc=_docs, conf=_settings())
def test_deterministic(counter: TokenCounter, doc: ParsedDocument, conf: ChunkerSettings) -> None:
    first = [c.model_dump() for c in _chunk(counter, conf, doc)]
    assert first == [c.model_dump() for c in _chunk(counter, conf, doc)]


@_SETTINGS
@given(doc=_docs, conf=_settings())
def test_limits_and_structure(
    counter: TokenCounter, doc: ParsedDocument, conf: ChunkerSettings
) -> None:
    chunks = _chunk(counter, conf, doc)
    parents: dict[str, Chunk] = {}
    for c in chunks:
        if c.level is ChunkLevel.PARENT:
            parents[c.chunk_id] = c
            assert c.token_count == counter.count(c.text)
            continue
        assert c.token_count == counter.count(c.text) <= conf.child_max_tokens
        assert len(c.text) <= conf.child_max_chars
        assert c.parent_id in parents  # parents come first
        assert parents[c.parent_id].section_path == c.section_path
    assert len({c.chunk_id for c in chunks}) == len(chunks)


@_SETTINGS
@given(doc=_docs, conf=_settings())
def test_children_reassemble_to_their_sections_modulo_overlap_and_whitespace(
    counter: TokenCounter, doc: ParsedDocument, conf: ChunkerSettings
) -> None:
    children = [
        c
        for c in _chunk(counter, conf, doc)
        if c.level is ChunkLevel.CHILD and c.content_type != "table"
    ]
    actual = [
        (
            path,
            _squash(
                "".join(
                    _CONT.sub("", c.text[int(c.extra["overlap_chars"]) :])  # type: ignore[arg-type]
                    for c in group
                )
            ),
        )
        for path, group in groupby(children, key=lambda c: c.section_path)
    ]
    runs = [
        (
            run[0].section_path,
            _squash("".join(_expected(b) for b in run if b.kind is not BlockKind.TABLE)),
        )
        for run in _sections(doc)
    ]
    expected = [
        (path, "".join(text for _, text in group))
        for path, group in groupby([r for r in runs if r[1]], key=lambda r: r[0])
    ]
    assert actual == expected  # nothing lost, nothing duplicated, nothing moved sections


@_SETTINGS
@given(doc=_docs, conf=_settings())
def test_table_rows_never_leave_their_header(
    counter: TokenCounter, doc: ParsedDocument, conf: ChunkerSettings
) -> None:
    tables = [
        b.table
        for b in doc.blocks
        if b.kind is BlockKind.TABLE and b.table is not None and (b.table.header or b.table.rows)
    ]
    children = [
        c
        for c in _chunk(counter, conf, doc)
        if c.level is ChunkLevel.CHILD and c.content_type == "table"
    ]
    for t in tables:
        heads = [  # several tables may share a header (with another caption)
            render_table(TableData(header=u.header, rows=(), caption=u.caption))
            for u in tables
            if u.header == t.header
        ]
        mine = [
            c
            for c in children
            if c.extra["table_header"] == list(t.header) and "column_start" not in c.extra
        ]
        if not mine:  # too wide to repeat: column bands (test_chunking_table_headers.py)
            # or a header alone too long for a child, split as text (no repeated header)
            assert any("column_start" in c.extra or not c.extra["table_header"] for c in children)
            continue
        for row in t.rows:
            line = render_table(TableData(header=(), rows=(row,)))
            record = "; ".join(f"{h}: {' '.join(v.split())}" for h, v in zip(t.header, row))
            holders = [c for c in mine if line in c.text.split("\n")]
            records = [c for c in mine if record in c.text.split("\n")]
            split_holders = [c for c in mine if c.extra["row_split"]]
            # a window of a wide table can fit whole while the others are banded
            banded = [c for c in children if "column_start" in c.extra]
            assert holders or records or split_holders or banded
            for c in holders:  # the row sits under its header (and caption) in the chunk
                assert any(c.text.startswith(h) for h in heads) or not t.header
