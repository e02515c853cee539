"""OpenSearch SIGKILLed in the middle of an ingest and of a stream of hybrid searches,
then restarted on its kept data directory (a private node: the session's is shared):

- every search answers 200; while the node is down, dense-only with ``degraded`` =
  ``["lexical_unavailable"]``; never a result outside the caller's groups;
- the indexer (its own process, through Kafka) waits for the node with backoff and loses
  nothing: every document ends indexed with ``os_revision = revision``, none is
  dead-lettered or quarantined;
- afterwards the tenant's index equals Postgres: the same chunk ids, generations and
  text hashes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from query_helpers import GROUP_A, Corpus, auth, query_settings, running_app

from ragline.config import Settings
from ragline.events import Topics
from ragline.indexing.os_sync import OsSyncer
from ragline.indexing.samples import embedded_event
from ragline.indexing.stage import IndexerStage
from ragline.platform.stack.opensearch import LocalOpenSearch
from ragline.platform.stack.testing import free_port, unique_tenant, wait_indexed
from ragline.retrieval.embed import QueryEmbedder
from ragline.runtime.publisher import EventPublisher
from ragline.store.os_client import make_client
from ragline.store.os_index import index_name
from ragline.store.pool import open_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

# several of the indexer's batches (up to max_records events each), so the node can be
# killed with some indexed and many still to go
_BATCH = IndexerStage.batch.max_records if IndexerStage.batch else 32
N_DOCS = 5 * _BATCH


@pytest_asyncio.fixture(loop_scope="session")
async def node(stack: Settings, tmp_path: Path) -> AsyncIterator[LocalOpenSearch]:
    url = f"http://127.0.0.1:{free_port()}"
    server = LocalOpenSearch.standalone(
        stack.model_copy(update={"opensearch_url": url}), tmp_path, heap_mb=512
    )
    await server.start()
    yield server
    await server.stop()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def test_opensearch_killed_during_ingest_and_queries(
    stack: Settings,
    corpus: Corpus,
    embedder: QueryEmbedder,
    node: LocalOpenSearch,
    service_process: Any,
) -> None:
    here = stack.model_copy(update={"opensearch_url": node.address})
    client = make_client(here)
    pool = await open_pool(stack.admin_dsn(), name="os-faults")
    try:
        # the query corpus on the private node, so hybrid searches have a lexical leg
        syncer = OsSyncer(client, index_prefix=here.opensearch_index_prefix, refresh="true")
        async with pool.connection() as conn:
            await syncer.sync(conn, corpus.tenant, sorted(corpus.all_docs), force=True)

        tenant = unique_tenant("osf")
        # retries at most 1 s apart (deployed: backoff doubling to 10 s), so the node's
        # return is seen within a second, not up to 10 s later; the same outage wait
        indexer = service_process(
            "indexer",
            env={
                "RAGLINE_OPENSEARCH_URL": node.address,
                "RAGLINE_INDEXER_OS_RETRY_BACKOFF_MAX_S": "1",
            },
        )
        await indexer.wait_metrics_async(timeout_s=180)
        events = [
            embedded_event(
                tenant_id=tenant,
                document_id=f"osf:{i:04d}",
                source_seq=1,
                texts=[f"Record {i}: the search node was killed.", f"Entry {i} survives."],
                acl_groups=("staff",),
            )
            for i in range(N_DOCS)
        ]
        async with EventPublisher(stack) as pub:
            for ev in events:
                await pub.publish(Topics.DOC_EMBEDDED, ev)

        visible = corpus.visible[(corpus.tenant, GROUP_A)]
        seen: list[tuple[int, list[str], set[str]]] = []
        stop = asyncio.Event()

        async def searches() -> None:
            qs = query_settings(backend_timeout_s=2.0)
            async with running_app(here, qs, embedder) as (_, http):
                h = auth(corpus.tenant, [GROUP_A])
                body = {"query": "How much annual leave do staff receive?", "top_k": 10}
                while not stop.is_set():
                    r = await http.post("/v1/search", json=body, headers=h)
                    js = r.json()
                    docs = {x["document_id"] for x in js.get("results", [])}
                    seen.append((r.status_code, js.get("degraded", []), docs))
                    await asyncio.sleep(0.1)

        task = asyncio.create_task(searches())
        n = await wait_indexed(stack.admin_dsn(), tenant, N_DOCS // 4, 180, [indexer])
        assert 0 < n < N_DOCS, "too fast to kill mid-ingest; raise N_DOCS"
        pid = node.pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(4.0)  # searches and the indexer meet a dead node
        down_at = len(seen)
        await node.start()  # the same data directory and port
        n = await wait_indexed(stack.admin_dsn(), tenant, N_DOCS, 300, [indexer])
        await asyncio.sleep(1.0)
        stop.set()
        await task

        assert n == N_DOCS, f"{n}/{N_DOCS} indexed after the restart"
        assert all(code == 200 for code, _, _ in seen), {c for c, _, _ in seen}
        assert all(d in ([], ["lexical_unavailable"]) for _, d, _ in seen)
        assert any(d == ["lexical_unavailable"] for _, d, _ in seen[:down_at])
        assert seen[-1][1] == [], "lexical leg not back after the restart"
        assert all(docs <= visible for _, _, docs in seen), "a result outside the scope"

        async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
            cur = await conn.execute(
                "SELECT status, count(*) FROM document_status WHERE tenant_id = %s GROUP BY 1",
                (tenant,),
            )
            statuses = dict(await cur.fetchall())
            cur = await conn.execute(
                "SELECT c.chunk_id, d.generation, c.text FROM chunks c JOIN documents d"
                " USING (tenant_id, document_id) WHERE c.tenant_id = %s AND c.level = 'child'",
                (tenant,),
            )
            truth = {(str(c), int(g), _digest(t)) for c, g, t in await cur.fetchall()}
        # nothing dead-lettered (a dead letter of a content topic is recorded quarantined)
        assert not set(statuses) & {"quarantined", "failed"}, statuses

        index = index_name(here.opensearch_index_prefix, tenant)
        await client.indices.refresh(index=index)
        resp = await client.search(
            index=index,
            body={"size": 10_000, "_source": ["chunk_id", "generation", "text"]},
        )
        copy = {
            (
                h["_source"]["chunk_id"],
                int(h["_source"]["generation"]),
                _digest(h["_source"]["text"]),
            )
            for h in resp["hits"]["hits"]
        }
        assert len(truth) == N_DOCS * 2
        assert copy == truth
    finally:
        with contextlib.suppress(Exception):
            await client.close()
        await pool.close()
