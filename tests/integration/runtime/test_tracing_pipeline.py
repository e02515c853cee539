"""One document, one trace: every consumer stage runs in this process through the real
runtime (``StageRunner``) on the real stack (its own topic prefix, so no other test's
services see these events), spans go to an in-process exporter, and the spans of one
``source.changes`` upsert form a single trace down to ``doc.indexed`` and the cache
invalidator: per hop consume -> handle -> publish, each consume span a child of (and
linked to) the publish span that produced its record, plus Postgres and OpenSearch
client spans inside."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from ragline.config import Settings
from ragline.events import DocumentMeta, SourceUpsert, Topics
from ragline.runtime.consumer import StageRunner
from ragline.runtime.lag import wait_drained
from ragline.runtime.logs import JsonFormatter
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.service_main import load_service
from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics
from ragline.runtime.topology import TOPOLOGY
from ragline.tracing import span, use_provider

pytestmark = pytest.mark.integration


@pytest.fixture
async def traced(stack: Settings) -> AsyncIterator[tuple[Settings, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_provider(provider)  # before the stages open their pools and clients
    settings = stack.model_copy(update={"kafka_topic_prefix": f"tr{uuid.uuid4().hex[:6]}."})
    await ensure_pipeline_topics(
        settings, partitions=1, replication_factor=1, topic_settings=TopicSettings()
    )
    runners: list[StageRunner] = []
    try:
        for svc in TOPOLOGY:
            stage = load_service(svc.name)(settings)
            runner = StageRunner(stage, settings, logging.getLogger(f"test.{svc.name}"))
            await stage.start()
            await runner.broker.start()
            runners.append(runner)
        yield settings, exporter
    finally:
        for runner in runners:
            await runner.broker.stop()
            await runner.stage.stop()
        use_provider(None)
        provider.shutdown()


async def test_one_document_is_one_trace_from_source_changes_to_doc_indexed(
    traced: tuple[Settings, InMemorySpanExporter], tenant: str
) -> None:
    settings, exporter = traced
    doc = f"fs:{tenant}/trace.md"
    event = SourceUpsert(
        tenant_id=tenant,
        document_id=doc,
        source_seq=1,
        meta=DocumentMeta(title="Trace", mime_type="text/markdown", acl_groups=("eng",)),
        content_text="# Tracing\n\nOne document, one trace, from the source to the index.",
    )
    async with EventPublisher(settings, service="test") as pub:
        await pub.publish(Topics.SOURCE_CHANGES, event)

    def indexed() -> list[Any]:
        return [
            s
            for s in exporter.get_finished_spans()
            if s.name == f"{Topics.DOC_INDEXED} process"
            and s.attributes.get("ragline.document_id") == doc
        ]

    for _ in range(480):  # the models load on the first message; no timing is asserted
        if indexed():
            break
        await asyncio.sleep(0.25)
    assert indexed(), "doc.indexed never consumed"
    await wait_drained(settings, None, timeout_s=30)

    spans = exporter.get_finished_spans()
    (root,) = [s for s in spans if s.name == f"{Topics.SOURCE_CHANGES} publish"]
    trace_id = root.context.trace_id
    mine = [s for s in spans if s.context.trace_id == trace_id]
    by_id = {s.context.span_id: s for s in mine}
    names = {s.name for s in mine}

    # every hop of the pipeline, in one trace
    for topic in (
        Topics.SOURCE_CHANGES,
        Topics.DOC_FETCHED,
        Topics.DOC_PARSED,
        Topics.DOC_SCANNED,
        Topics.DOC_CHUNKED,
        Topics.DOC_ENRICHED,
        Topics.DOC_EMBEDDED,
        Topics.DOC_INDEXED,
    ):
        assert f"{topic} process" in names, topic
    for topic in (Topics.DOC_FETCHED, Topics.DOC_EMBEDDED, Topics.DOC_INDEXED):
        assert f"{topic} publish" in names, topic
    for stage in ("connector", "parser", "scanner", "chunker", "embedder", "indexer"):
        assert f"{stage} handle" in names, stage
    assert any(n.startswith("postgres ") for n in names)
    assert any(n.startswith("opensearch ") and "_bulk" in n for n in names)

    # consume spans: children of the publish span that produced the record, and linked
    consumes = [s for s in mine if s.kind is SpanKind.CONSUMER]
    assert len(consumes) >= 8
    for s in consumes:
        parent = by_id[s.parent.span_id]
        assert parent.kind is SpanKind.PRODUCER, s.name
        assert parent.name.split()[0] == s.name.split()[0]  # same topic
        assert [link.context.span_id for link in s.links] == [parent.context.span_id]
    # handle and publish nest under the consume span of their record
    for s in mine:
        if s.name.endswith(" handle"):
            assert by_id[s.parent.span_id].kind is SpanKind.CONSUMER
    # nothing of this document leaked into another trace
    assert not [
        s
        for s in spans
        if s.attributes.get("ragline.document_id") == doc and s.context.trace_id != trace_id
    ]


def test_log_lines_carry_the_trace_and_span_ids() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_provider(provider)
    try:
        record = logging.LogRecord("ragline.x", logging.INFO, __file__, 1, "hello", None, None)
        with span("work") as s:
            line = JsonFormatter("parser").format(record)
        sc = s.get_span_context()
        assert f'"trace_id": "{sc.trace_id:032x}"' in line
        assert f'"span_id": "{sc.span_id:016x}"' in line
    finally:
        use_provider(None)
    assert "trace_id" not in JsonFormatter("parser").format(record)
