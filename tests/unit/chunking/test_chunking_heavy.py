"""Heavy documents in the chunker (issue 18; ragline.text.weight, chunking/stage.py): the
line locator that replaced a per-chunk scan, and the
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
from ragline.chunking.sections import Piece
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.errors import QuarantineError
from ragline.events import (
    BULK,
    INTERACTIVE,
    DocChunked,
    DocScanned,
    DocumentMeta,
    FindingsSummary,
    ParsedDocument,
    Topics,
)
from ragline.runtime.stage import Output, StageContext
from ragline.scanning.seal import as_scanned

# the rule itself (one measure for the parser and the chunker): tests/unit/text/test_text_weight.py


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
    return as_scanned(
        DocScanned.model_validate(
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
