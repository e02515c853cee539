"""The chunker Stage's handle(): doc.scanned in, doc.chunked out."""

from __future__ import annotations

import logging

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
