"""The chunker Stage's handle(): doc.scanned in, doc.chunked out."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType

import pytest
from chunking_docs import doc, para, prose, table

from ragline.config import Settings
from ragline.events import (
    ChunkLevel,
    DocChunked,
    DocScanned,
    DocumentMeta,
    FindingsSummary,
    Topics,
)
from ragline.runtime.stage import StageContext
from ragline.scanning.seal import as_scanned
from services.chunker.handlers import build


def _scanned(**kw: object) -> DocScanned:
    base: dict[str, object] = {
        "tenant_id": "acme",
        "document_id": "fs:guide.md",
        "content_hash": "d" * 64,
        "source_seq": 7,
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "meta": DocumentMeta(title="Guide", uri="file:///guide.md", acl_groups=("eng",)),
        "document": doc(para(prose(40)), table(10)),
        "findings": FindingsSummary(counts={"pii:EMAIL_ADDRESS": 2}),
        "scanner_version": "1",
        "change": "resync",
    }
    base.update(kw)
    return as_scanned(DocScanned.model_validate(base))


@pytest.fixture
def ctx() -> StageContext:
    return StageContext(settings=Settings(), logger=logging.getLogger("test"))


async def test_handle_emits_one_doc_chunked(ctx: StageContext) -> None:
    """Envelope, redelivery, wire and refusals: tests/integration/runtime/test_stage_contract.py."""
    stage = build(Settings())
    assert stage.name == "chunker" and stage.input_topics == (Topics.DOC_SCANNED.value,)
    await stage.start()
    (out,) = await stage.handle(_scanned(), ctx)
    assert out.topic == Topics.DOC_CHUNKED.value
    chunked = out.event
    assert isinstance(chunked, DocChunked)
    assert {c.level for c in chunked.chunks} == {ChunkLevel.PARENT, ChunkLevel.CHILD}
    assert {c.content_type for c in chunked.chunks} >= {"text", "table"}
    await stage.stop()


async def test_an_empty_document_yields_an_event_without_chunks(ctx: StageContext) -> None:
    stage = build(Settings())
    await stage.start()
    (out,) = await stage.handle(_scanned(document=doc(para("  "))), ctx)
    assert isinstance(out.event, DocChunked) and out.event.chunks == ()


async def test_a_poll_is_chunked_in_one_thread_call_each_event_on_its_own(
    ctx: StageContext, poll_probe: Callable[[ModuleType, str, str], list[object]]
) -> None:
    """Issue 35: ``process_batch`` chunks a poll's light documents in one worker-thread
    call; each event gets what ``handle`` alone gives it (a heavy interactive one still
    goes to the bulk lane unchunked), and a failing one fails only itself."""
    from ragline.chunking import stage as stage_module
    from ragline.chunking.config import ChunkerSettings
    from ragline.chunking.stage import ChunkerStage

    stage = ChunkerStage(Settings(), ChunkerSettings(heavy_chars=20_000))
    await stage.start()
    first = _scanned()
    heavy = _scanned(document_id="fs:heavy.md", document=doc(para(prose(4000))))
    bad = _scanned(document_id="fs:broken.md")
    last = _scanned(document_id="fs:other.md", document=doc(para(prose(300))))
    alone = [await stage.handle(ev, ctx) for ev in (first, heavy, last)]
    assert alone[1][0].topic == Topics.DOC_SCANNED.value  # sent on to the bulk lane
    calls = poll_probe(stage_module, "chunk_event", "fs:broken.md")
    results = await stage.handle_batch([first, heavy, bad, last], ctx)
    await stage.stop()
    assert len(calls) == 1
    assert isinstance(results[2], ValueError)
    assert [results[0], results[1], results[3]] == alone
