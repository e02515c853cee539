"""Property 2: SIGKILL the embedder and then the indexer in the middle of an ingest,
restart them: every document is indexed exactly once, in both stores. The services run
as their own processes (``ragline run``) on the real stack, through Kafka."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from opensearchpy import AsyncOpenSearch

from ragline.config import Settings
from ragline.events import Topics
from ragline.indexing.samples import enriched_event
from ragline.platform.stack.testing import wait_indexed
from ragline.runtime.publisher import EventPublisher
from ragline.store.os_index import index_name

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

N_DOCS = 240


async def test_sigkill_mid_ingest_indexes_everything_exactly_once(
    stack: Settings, service_process: Any, os_client: AsyncOpenSearch, tenant: str
) -> None:
    events = [
        enriched_event(
            tenant_id=tenant,
            document_id=f"kill:{i:04d}",
            source_seq=1,
            texts=[f"Note {i}: the service restarted.", f"Item {i} is fine."],
            acl_groups=("staff",),
        )
        for i in range(N_DOCS)
    ]
    embedder = service_process("embedder")
    indexer = service_process("indexer")
    await embedder.wait_metrics_async(timeout_s=180)
    await indexer.wait_metrics_async(timeout_s=120)
    async with EventPublisher(stack) as pub:
        for ev in events:
            await pub.publish(Topics.DOC_ENRICHED, ev)

    n = await wait_indexed(stack.admin_dsn(), tenant, N_DOCS // 4, 180, [embedder, indexer])
    assert 0 < n < N_DOCS, "too fast to kill mid-ingest; raise N_DOCS"
    assert embedder.kill() == -9
    embedder = service_process("embedder")
    await embedder.wait_metrics_async(timeout_s=180)

    n = await wait_indexed(stack.admin_dsn(), tenant, N_DOCS // 2, 180, [embedder, indexer])
    assert indexer.kill() == -9
    indexer = service_process("indexer")
    await indexer.wait_metrics_async(timeout_s=120)

    n = await wait_indexed(stack.admin_dsn(), tenant, N_DOCS, 300, [embedder, indexer])
    assert n == N_DOCS
    await asyncio.sleep(1.0)  # anything still in flight would show up as a duplicate

    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT count(*), min(generation), max(generation), sum(chunk_count)"
            " FROM documents WHERE tenant_id = %s",
            (tenant,),
        )
        docs, gmin, gmax, chunk_sum = await cur.fetchone()
        cur = await conn.execute(
            "SELECT count(*), count(DISTINCT chunk_id), count(embedding)"
            " FROM chunks WHERE tenant_id = %s",
            (tenant,),
        )
        rows, distinct, with_vec = await cur.fetchone()
    assert docs == N_DOCS and gmin == gmax == 1  # applied exactly once each
    per_doc = len(events[0].chunks)  # 1 parent + 2 children
    assert rows == distinct == chunk_sum == N_DOCS * per_doc
    assert with_vec == N_DOCS * 2
    index = index_name(stack.opensearch_index_prefix, tenant)
    await os_client.indices.refresh(index=index)
    assert (await os_client.count(index=index))["count"] == N_DOCS * 2
