"""The harness's ingest against the real stack: its events reach ``source.changes`` through
the real broker, and its wait reads the real ``documents`` / ``document_status`` schema.

The pipeline services are not started here (tests/e2e/test_golden.py does that): the test
writes the rows the indexer would write, so what is proven is the harness's own side.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer
from pydantic import TypeAdapter

from ragline.config import Settings
from ragline.evaluation.datasets import AfterIngest, EvalDataset, SourceDocument
from ragline.evaluation.ingest import IngestTimeout, ingest_dataset
from ragline.events import DocumentMeta, SourceChange, Topics

pytestmark = pytest.mark.integration

_UPSERT = (
    "INSERT INTO documents (tenant_id, document_id, content_hash, source_seq, acl_seq, status,"
    " acl_groups) VALUES (%s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (tenant_id, document_id) DO UPDATE SET content_hash = EXCLUDED.content_hash,"
    " source_seq = EXCLUDED.source_seq, acl_seq = EXCLUDED.acl_seq, status = EXCLUDED.status,"
    " acl_groups = EXCLUDED.acl_groups"
)


def _dataset(tenant: str) -> EvalDataset:
    docs = tuple(
        SourceDocument(
            tenant=tenant,
            document_id=f"evaltest:{n}",
            meta=DocumentMeta(acl_groups=("staff",), mime_type="text/markdown", title=n),
            content_text=f"# {n}\n\nbody of {n}\n",
            expect="quarantined" if n == "bad" else "indexed",
        )
        for n in ("one", "two", "bad")
    )
    return EvalDataset(
        name="golden:evaltest",
        kind="golden",
        documents=docs,
        after_ingest=(
            AfterIngest(action="delete", tenant=tenant, document_id="evaltest:two"),
            AfterIngest(
                action="acl", tenant=tenant, document_id="evaltest:one", acl_groups=("hr",)
            ),
        ),
        cases=(),
    )


async def _play_indexer(settings: Settings, ds: EvalDataset, stop: asyncio.Event) -> list[Any]:
    """Consume source.changes like the pipeline would and write its end state."""
    consumer = AIOKafkaConsumer(
        Topics.SOURCE_CHANGES.value,
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=None,  # no group: every partition at once, no join wait (~5 s)
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    adapter: TypeAdapter[Any] = TypeAdapter(SourceChange)
    seen: list[Any] = []
    await consumer.start()
    try:
        async with await psycopg.AsyncConnection.connect(
            settings.admin_dsn(), autocommit=True
        ) as conn:
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=200)
                for records in batch.values():
                    for rec in records:
                        # other tests publish to the same topic, poison included: look at
                        # this test's tenant only
                        if json.loads(rec.value).get("tenant_id") != ds.documents[0].tenant:
                            continue
                        ev = adapter.validate_json(rec.value)
                        seen.append(ev)
                        await _apply(conn, ev)
    finally:
        await consumer.stop()
    return seen


async def _apply(conn: psycopg.AsyncConnection[Any], ev: Any) -> None:
    key = (ev.tenant_id, ev.document_id)
    if ev.event_type == "source.upsert":
        if ev.document_id.endswith(":bad"):
            await conn.execute(
                "INSERT INTO document_status (tenant_id, document_id, source_seq, content_hash,"
                " stage, status, reason_code) VALUES (%s, %s, %s, %s, 'scanner', 'quarantined',"
                " 'secret_found')",
                (*key, ev.source_seq, ev.content_hash),
            )
            return
        params = (*key, ev.content_hash, ev.source_seq, ev.source_seq, "indexed")
        await conn.execute(_UPSERT, (*params, list(ev.meta.acl_groups)))
    elif ev.event_type == "source.delete":
        await conn.execute(
            "UPDATE documents SET status = 'deleted', source_seq = %s"
            " WHERE tenant_id = %s AND document_id = %s",
            (ev.source_seq, *key),
        )
    else:
        await conn.execute(
            "UPDATE documents SET acl_groups = %s, acl_seq = %s"
            " WHERE tenant_id = %s AND document_id = %s",
            (list(ev.acl_groups), ev.source_seq, *key),
        )


async def test_ingest_publishes_and_waits(stack: Settings, tenant: str) -> None:
    ds = _dataset(tenant)
    stop = asyncio.Event()
    indexer = asyncio.create_task(_play_indexer(stack, ds, stop))
    try:
        result = await ingest_dataset(ds, stack, timeout_s=60, poll_interval_s=0.1, progress=False)
    finally:
        stop.set()
        seen = await indexer
    assert result.documents == 3 and result.indexed == 2
    assert result.quarantined == {"evaltest:bad": "secret_found"}
    assert result.unexpected == []
    assert result.indexed_s >= result.publish_s > 0
    kinds = [e.event_type for e in seen]
    assert kinds.count("source.upsert") == 3
    assert kinds[-2:] in (["source.delete", "source.acl"], ["source.acl", "source.delete"])
    upserts = [e for e in seen if e.event_type == "source.upsert"]
    follow = [e for e in seen if e.event_type != "source.upsert"]
    assert len({e.source_seq for e in upserts}) == 1
    assert all(f.source_seq == upserts[0].source_seq + 1 for f in follow)
    by_id = {d.document_id: d for d in ds.documents}
    assert all(e.content_hash == by_id[e.document_id].content_hash for e in upserts)


async def test_ingest_times_out_with_the_missing_documents(stack: Settings, tenant: str) -> None:
    ds = _dataset(tenant)  # nobody plays the indexer
    with pytest.raises(IngestTimeout, match=r"3 of 3 documents not done .*evaltest:"):
        await ingest_dataset(ds, stack, timeout_s=1.5, poll_interval_s=0.2, progress=False)
