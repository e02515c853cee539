"""Heavy documents in the chunker (issue 18; chunking/heavy.py, chunking/stage.py): the
heaviness rule, hostile shapes, the line locator that replaced a per-chunk scan, and the
stage's offload (a process of its own, the bulk lane, the time bound)."""

from __future__ import annotations

import logging
import multiprocessing

import pytest
from chunking_docs import doc, para, prose, table
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from ragline.chunking import ChunkerSettings
from ragline.chunking.chunker import _Lines
from ragline.chunking.heavy import Weight, weigh
from ragline.chunking.sections import Piece
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.errors import QuarantineError
from ragline.events import (
    BULK,
    INTERACTIVE,
    Block,
    BlockKind,
    DocChunked,
    DocScanned,
    DocumentMeta,
    FindingsSummary,
    ParsedDocument,
    TableData,
    Topics,
)
from ragline.runtime.stage import Output, StageContext

# ----------------------------------------------------------------------------- the rule


def test_weight_counts_characters_blocks_lines_and_cells() -> None:
    d = doc(para("one\ntwo\nthree"), table(4, width=3), title="T")
    w = weigh(d)
    assert w.blocks == 2
    assert w.chars == len("one\ntwo\nthree") + len("T")  # the table block's text is ""
    assert w.lines == 3 + 1
    assert w.cells == 3 + 4 * 3  # header included


def test_each_measure_has_its_own_threshold_and_zero_is_off() -> None:
    conf = ChunkerSettings(heavy_chars=10, heavy_blocks=2, heavy_lines=3, heavy_cells=4)
    assert Weight(chars=10, blocks=2, lines=3, cells=4).over(conf) == ()  # "above", not "at"
    assert Weight(chars=11, blocks=3, lines=4, cells=5).over(conf) == (
        "chars",
        "blocks",
        "lines",
        "cells",
    )
    off = ChunkerSettings(heavy_chars=0, heavy_blocks=0, heavy_lines=0, heavy_cells=0)
    assert not Weight(chars=10**12, blocks=10**9, lines=10**12, cells=10**12).heavy(off)


def test_hostile_shapes_are_weighed_without_tokenizing() -> None:
    conf = ChunkerSettings()
    wide = Block(  # 100k columns (the parser folds past 512; the event allows more)
        kind=BlockKind.TABLE,
        text="",
        table=TableData(header=tuple(f"c{i}" for i in range(100_000)), rows=(("1",) * 100_000,)),
    )
    assert weigh(doc(wide)).over(conf) == ("cells",)
    line = para("v," * (10 * 2**20))  # a 20 MB single line
    assert weigh(doc(line)).over(conf) == ("chars",)
    assert weigh(doc(line)).lines == 1
    odd = para("a\x00b\ud800c\udfff\u200b\n" * 60_000)  # NUL, lone surrogates, zero-width
    w = weigh(doc(odd))
    assert w.over(conf) == ("lines",) and w.lines == 60_001
    many = doc(*(para("x") for _ in range(5_001)))
    assert weigh(many).over(conf) == ("blocks",)
    # an ordinary document is light: it stays in the thread and its lane
    assert weigh(doc(para(prose(200)), table(50))).over(conf) == ()


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(alphabet="ab\n\x00\ud800", max_size=40), min_size=1, max_size=5),
)
def test_weight_is_additive_over_blocks(texts: list[str]) -> None:
    blocks = [para(t) for t in texts]
    whole = weigh(doc(*blocks, title=None))
    parts = [weigh(doc(b, title=None)) for b in blocks]
    assert whole.chars == sum(p.chars for p in parts)
    assert whole.lines == sum(p.lines for p in parts)
    assert whole.blocks == len(blocks)


# ----------------------------------------------------------------------------- line locator


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="x\n", max_size=60),
    offset=st.integers(0, 30),
    pos=st.integers(0, 60),
    line_start=st.integers(1, 1000),
    extra_end=st.sampled_from([None, 0, 1]),
)
def test_line_locator_matches_a_scan_of_the_block(
    text: str, offset: int, pos: int, line_start: int, extra_end: int | None
) -> None:
    """The locator answers what the former per-chunk ``str.count`` scan answered."""
    newlines = text.count("\n")
    line_end = None if extra_end is None else line_start + newlines + extra_end
    block = para(text or "x", line_start=line_start, line_end=line_end)
    piece = Piece(index=0, block=block, text=block.text[offset:], offset=offset)
    consistent = line_end is None or line_end - line_start == block.text.count("\n")
    expected = line_start + block.text.count("\n", 0, offset + pos) if consistent else line_start
    lines = _Lines()
    assert lines.consistent(block) is consistent
    assert lines.line_at(piece, pos) == expected
    assert lines.line_at(piece, pos) == expected  # cached: same answer


# ----------------------------------------------------------------------------- the stage


def _scanned(document: ParsedDocument, tenant: str = "acme", lane: str = INTERACTIVE) -> DocScanned:
    return DocScanned.model_validate(
        {
            "tenant_id": tenant,
            "document_id": f"fs:{tenant}/big.md",
            "content_hash": "d" * 64,
            "source_seq": 3,
            "meta": DocumentMeta(title="Big", uri="file:///big.md", acl_groups=("eng",)),
            "document": document,
            "findings": FindingsSummary(),
            "scanner_version": "1",
            "priority": lane,
        }
    )


@pytest.fixture
def ctx() -> StageContext:
    return StageContext(settings=Settings(), logger=logging.getLogger("test"))


def _sample(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


async def _outputs(
    stage: ChunkerStage, event: DocScanned, ctx: StageContext
) -> list[Output[DocChunked | DocScanned]]:
    await stage.start()
    try:
        return list(await stage.handle(event, ctx))
    finally:
        await stage.stop()


async def _chunked(stage: ChunkerStage, event: DocScanned, ctx: StageContext) -> DocChunked:
    (out,) = await _outputs(stage, event, ctx)
    assert out.topic == Topics.DOC_CHUNKED and isinstance(out.event, DocChunked)
    return out.event


async def test_a_heavy_document_leaves_the_interactive_lane_then_gets_its_own_process(
    ctx: StageContext,
) -> None:
    event = _scanned(doc(para(prose(60)), table(30)))
    light = await _chunked(ChunkerStage(Settings(), ChunkerSettings()), event, ctx)
    heavy_conf = ChunkerSettings(heavy_chars=100)  # this document is over it
    # on the interactive lane: sent on, unchanged, to this stage's own bulk lane
    (moved,) = await _outputs(ChunkerStage(Settings(), heavy_conf), event, ctx)
    assert moved.topic == Topics.DOC_SCANNED
    assert moved.event == event.model_copy(update={"priority": BULK})
    # on the bulk lane: chunked in a process of its own that exits afterwards
    before = {p.pid for p in multiprocessing.active_children()}
    offloaded = _sample("ragline_chunking_heavy_documents_total")
    heavy = await _chunked(ChunkerStage(Settings(), heavy_conf), moved.event, ctx)
    assert _sample("ragline_chunking_heavy_documents_total") == offloaded + 1
    assert not {p.pid for p in multiprocessing.active_children()} - before
    # the same chunks and ids (the heavy thresholds do not shape chunks), another lane
    assert heavy.chunks == light.chunks
    assert heavy_conf.strategy_version == ChunkerSettings().strategy_version
    assert light.priority == INTERACTIVE and heavy.priority == BULK


async def test_many_children_go_bulk_without_a_process(ctx: StageContext) -> None:
    event = _scanned(doc(para(prose(60))))
    out = await _chunked(ChunkerStage(Settings(), ChunkerSettings(heavy_children=1)), event, ctx)
    assert sum(1 for c in out.chunks if c.level.value == "child") > 1
    assert out.priority == BULK
    # a bulk input stays bulk whatever its weight (a lane only goes down)
    bulk = await _chunked(
        ChunkerStage(Settings(), ChunkerSettings()), _scanned(doc(para("short")), lane=BULK), ctx
    )
    assert bulk.priority == BULK


async def test_a_document_over_the_time_bound_is_quarantined(ctx: StageContext) -> None:
    conf = ChunkerSettings(heavy_chars=100, heavy_timeout_s=0.05)  # not even a start-up
    stage = ChunkerStage(Settings(), conf)
    await stage.start()
    try:
        with pytest.raises(QuarantineError) as info:
            await stage.handle(_scanned(doc(para(prose(60))), lane=BULK), ctx)
    finally:
        await stage.stop()
    assert info.value.reason_code == "chunk_timeout"
    assert "chars" in info.value.reason and "0.05s" in info.value.reason


async def test_a_document_with_too_many_children_is_quarantined(ctx: StageContext) -> None:
    stage = ChunkerStage(Settings(), ChunkerSettings(max_children=1))
    await stage.start()
    try:
        with pytest.raises(QuarantineError) as info:
            await stage.handle(_scanned(doc(para(prose(60)))), ctx)
    finally:
        await stage.stop()
    assert info.value.reason_code == "too_heavy"
