"""The enricher Stage's handle(): doc.chunked in, doc.enriched out."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType

import pytest

from ragline.config import Settings
from ragline.events import (
    Chunk,
    ChunkLevel,
    DocChunked,
    DocEnriched,
    DocumentMeta,
    FindingsSummary,
    Topics,
)
from ragline.runtime.stage import StageContext
from ragline.scanning.seal import as_scanned
from services.enricher.handlers import build


@pytest.fixture
def ctx() -> StageContext:
    return StageContext(settings=Settings(), logger=logging.getLogger("test"))


def _chunked(make_chunk: Callable[..., Chunk]) -> DocChunked:
    parent = make_chunk("Install the gateway. Then start it.", 0, level=ChunkLevel.PARENT)
    child = make_chunk("Install the gateway. Then start it.", 0, parent_id=parent.chunk_id)
    return as_scanned(
        DocChunked(
            tenant_id="acme",
            document_id="fs:guide.md",
            content_hash="f" * 64,
            source_seq=11,
            traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            meta=DocumentMeta(title="Guide", version="2.0"),
            chunks=(parent, child),
            findings=FindingsSummary(counts={"secret:aws_access_key": 1}),
            change="metadata",
        )
    )


async def test_handle_enriches_every_chunk(
    ctx: StageContext, make_chunk: Callable[..., Chunk]
) -> None:
    """Envelope, redelivery, wire and refusals: tests/integration/runtime/test_stage_contract.py."""
    stage = build(Settings())
    assert stage.name == "enricher" and stage.input_topics == (Topics.DOC_CHUNKED.value,)
    await stage.start()
    event = _chunked(make_chunk)
    (out,) = await stage.handle(event, ctx)
    assert out.topic == Topics.DOC_ENRICHED.value
    enriched = out.event
    assert isinstance(enriched, DocEnriched)
    assert [c.chunk_id for c in enriched.chunks] == [c.chunk_id for c in event.chunks]
    assert all(c.enrichment is not None for c in enriched.chunks)
    assert enriched.chunks[1].enrichment.contextual_header == "Guide > Install (v2.0)"  # type: ignore[union-attr]


async def test_a_poll_is_enriched_in_one_thread_call_each_event_on_its_own(
    ctx: StageContext,
    make_chunk: Callable[..., Chunk],
    poll_probe: Callable[[ModuleType, str, str], list[object]],
) -> None:
    """Issue 35: ``process_batch`` hands a poll's events to one worker-thread call; each
    event gets what ``handle`` alone gives it, and a failing one fails only itself."""
    from ragline.enrichment import stage as stage_module

    stage = build(Settings())
    await stage.start()
    first = _chunked(make_chunk)
    bad = first.model_copy(update={"document_id": "fs:broken.md", "event_id": "b" * 32})
    last = first.model_copy(update={"document_id": "fs:other.md", "event_id": "c" * 32})
    alone = [await stage.handle(ev, ctx) for ev in (first, last)]
    calls = poll_probe(stage_module, "enrich_event", "fs:broken.md")
    results = await stage.handle_batch([first, bad, last], ctx)
    assert len(calls) == 1
    assert isinstance(results[1], ValueError)
    assert [results[0], results[2]] == alone
