"""A heavy document in the chunker, on the real stack (issue 18; docs/lanes.md): the real
chunker and indexer stages run through the real runtime (``StageRunner``) under their own
topic prefix, with one partition per topic (every document shares it).

* It never holds the interactive lane: a heavy document of one tenant, published on the
  interactive lane right before a one-line document of another tenant, is sent on to
  ``doc.scanned.bulk``; the one-line document's chunks come out on the interactive lane.
* It holds the bulk lane for at most ``RAGLINE_CHUNKER_HEAVY_TIMEOUT_S``: past it the
  document's status is ``quarantined`` with reason ``chunk_timeout`` (a bound far below a
  process start, so it is always exceeded: no timing is asserted).
* A consumer hands memory back after a large message (``RAGLINE_RELEASE_MEMORY_BYTES``).
* A small but wide document (a 209 KB CSV of 20,000 columns) never holds the interactive
  lane of the parser and the scanner: the parser weighs it once parsed (the chunker's
  measure, ``ragline.text.weight``) and sends it on in the bulk lane.
"""

from __future__ import annotations

import base64
import logging
import uuid
from typing import Any

import psycopg
import pytest
from runtime_helpers import markdown_fetched, read_events

from ragline.chunking.config import ChunkerSettings
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.events import (
    BULK,
    Block,
    BlockKind,
    DocFetched,
    DocScanned,
    DocumentMeta,
    FindingsSummary,
    ParsedDocument,
    Topics,
    lane_topic,
)
from ragline.hashing import content_hash
from ragline.parsing.settings import ParserSettings
from ragline.parsing.stage import ParserStage
from ragline.runtime.consumer import StageRunner
from ragline.runtime.lag import wait_drained
from ragline.runtime.oneshot import release_memory
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.service_main import load_service
from ragline.runtime.stage import Stage
from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics
from ragline.scanning.seal import as_scanned
from ragline.scanning.settings import ScannerSettings
from ragline.scanning.stage import ScannerStage

pytestmark = pytest.mark.integration


def _scanned(tenant: str, doc: str, text: str) -> DocScanned:
    return as_scanned(
        DocScanned(
            tenant_id=tenant,
            document_id=doc,
            source_seq=1,
            content_hash=content_hash(text.encode()),
            meta=DocumentMeta(title=doc, mime_type="text/markdown", acl_groups=("eng",)),
            document=ParsedDocument(
                format="markdown",
                blocks=(Block(kind=BlockKind.LIST, text=text, section_path=(doc,)),),
            ),
            findings=FindingsSummary(),
            scanner_version="1",
        )
    )


async def _ids(settings: Settings, logical: str) -> list[str]:
    """The document ids of the one record expected on ``logical``."""
    return [e["document_id"] for e in await read_events(settings, logical, 1)]


async def _status(settings: Settings, tenant: str, doc: str) -> tuple[Any, ...] | None:
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT status, reason_code, stage FROM document_status"
            " WHERE tenant_id = %s AND document_id = %s",
            (tenant, doc),
        )
        return await cur.fetchone()


async def test_a_heavy_document_leaves_the_interactive_lane_and_ends_within_its_bound(
    stack: Settings, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = stack.model_copy(
        update={"kafka_topic_prefix": f"hv{uuid.uuid4().hex[:6]}.", "release_memory_bytes": 4096}
    )
    await ensure_pipeline_topics(
        settings, partitions=1, replication_factor=1, topic_settings=TopicSettings()
    )
    releases: list[int] = []

    def counted() -> bool:
        releases.append(1)
        return release_memory()

    monkeypatch.setattr("ragline.runtime.consumer.release_memory", counted)
    chunker = ChunkerStage(settings, ChunkerSettings(heavy_lines=1000, heavy_timeout_s=0.01))
    indexer = load_service("indexer")(settings)
    stages: list[Stage[Any, Any]] = [chunker, indexer]
    runners = [StageRunner(s, settings, logging.getLogger(f"test.{s.name}")) for s in stages]
    heavy_tenant, other_tenant = f"{tenant}-heavy", f"{tenant}-other"
    heavy = _scanned(heavy_tenant, "fs:big.md", "".join(f"- item {i}\n" for i in range(5000)))
    small = _scanned(other_tenant, "fs:one-line.md", "One line.")
    try:
        for stage, runner in zip(stages, runners, strict=True):
            await stage.start()
            await runner.broker.start()
        async with EventPublisher(settings, service="test") as pub:
            # the same partition, the heavy one first, both interactive
            await pub.publish(Topics.DOC_SCANNED, heavy)
            await pub.publish(Topics.DOC_SCANNED, small)
        # the interactive lane: the one-line document's chunks, never the heavy one's
        # (the heavy one is first in the partition: chunked here, it would come first)
        assert await _ids(settings, Topics.DOC_CHUNKED) == [small.document_id]
        assert await _ids(settings, lane_topic(Topics.DOC_SCANNED, BULK)) == [heavy.document_id]
        lags = await wait_drained(settings, ["chunker", "indexer"], timeout_s=180)
        assert sum(x.total for x in lags) == 0, lags
    finally:
        for stage, runner in zip(stages, runners, strict=True):
            await runner.broker.stop()
            await stage.stop()
    # past its bound: a visible terminal status with its reason, and the lane moved on
    assert await _status(settings, heavy_tenant, heavy.document_id) == (
        "quarantined",
        "chunk_timeout",
        "chunker",
    )
    assert await _ids(settings, lane_topic(Topics.DOC_QUARANTINED, BULK)) == [heavy.document_id]
    assert releases  # the heavy document's messages (~60 KB) were over the test's 4 KB


def _wide_csv(tenant: str) -> DocFetched:
    """The freshness benchmark's wide CSV: 20,000 columns in 209 KB, under every byte
    threshold (the connector's and the parser's 1 MB), heavy only by its parsed shape."""
    header = ",".join(f"c{i}" for i in range(20_000))
    row = ",".join(str(i % 10) for i in range(20_000))
    raw = f"{header}\n{row}\n{row}\n".encode()
    return markdown_fetched(tenant, "fs:wide.csv").model_copy(
        update={
            "meta": DocumentMeta(title="wide", mime_type="text/csv", acl_groups=("eng",)),
            "content_b64": base64.b64encode(raw).decode(),
            "content_hash": content_hash(raw),
            "size_bytes": len(raw),
        }
    )


async def test_a_wide_csv_never_holds_the_interactive_lane_of_the_parser_and_scanner(
    stack: Settings, tenant: str
) -> None:
    """The 20,000-column CSV and a one-line document of another tenant, both sent
    interactively, the CSV first in the same partition: the parser sends the CSV on in
    the bulk lane once parsed (heavy by its longest line), so the one-line document is
    the only one on the interactive lane of the scanner and comes out of it; the CSV
    is scanned on the bulk lane, where it ends with a reason (``scan_timeout``: the
    test's 3 s deadline is far below what its digit rows cost the phone-number matcher;
    no timing is asserted) without failing anything beside it."""
    settings = stack.model_copy(update={"kafka_topic_prefix": f"hw{uuid.uuid4().hex[:6]}."})
    await ensure_pipeline_topics(
        settings, partitions=1, replication_factor=1, topic_settings=TopicSettings()
    )
    stages: list[Stage[Any, Any]] = [
        ParserStage(settings, ParserSettings(workers=0)),
        ScannerStage(settings, ScannerSettings(deadline_s=3.0, deadline_per_mb_s=0.0)),
        load_service("indexer")(settings),
    ]
    runners = [StageRunner(s, settings, logging.getLogger(f"test.{s.name}")) for s in stages]
    wide = _wide_csv(f"{tenant}-wide")
    small = markdown_fetched(f"{tenant}-other", "fs:one-line.md", "One line.")
    try:
        for stage, runner in zip(stages, runners, strict=True):
            await stage.start()
            await runner.broker.start()
        async with EventPublisher(settings, service="test") as pub:
            await pub.publish(Topics.DOC_FETCHED, wide)  # first in the partition
            await pub.publish(Topics.DOC_FETCHED, small)
        # the interactive lane after the parser and after the scanner: only the one-line
        # document (before, the CSV came first on both and the scanner held it 33-70 s)
        assert await _ids(settings, Topics.DOC_PARSED) == [small.document_id]
        assert await _ids(settings, Topics.DOC_SCANNED) == [small.document_id]
        assert await _ids(settings, lane_topic(Topics.DOC_PARSED, BULK)) == [wide.document_id]
        lags = await wait_drained(settings, ["parser", "scanner", "indexer"], timeout_s=240)
        assert sum(x.total for x in lags) == 0, lags
    finally:
        for stage, runner in zip(stages, runners, strict=True):
            await runner.broker.stop()
            await stage.stop()
    assert await _status(settings, wide.tenant_id, wide.document_id) == (
        "quarantined",
        "scan_timeout",
        "scanner",
    )
    assert await _ids(settings, lane_topic(Topics.DOC_QUARANTINED, BULK)) == [wide.document_id]
