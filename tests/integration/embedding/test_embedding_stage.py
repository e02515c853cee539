"""The embedder stage with the real all-MiniLM-L6-v2 (offline) and the Postgres cache,
then its output through the indexer: vectors land in pgvector and answer a dense query
under row-level security."""

from __future__ import annotations

import logging
import uuid

import numpy as np
import psycopg
import pytest
import pytest_asyncio
from pgvector.psycopg import register_vector_async

from ragline.embedding.metrics import CHUNKS_EMBEDDED
from ragline.embedding.model import DEFAULT_MODEL_NAME
from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.space_models import configured_identity
from ragline.embedding.stage import EmbedderStage
from ragline.events import ChunkLevel, DocEmbedded, Topics
from ragline.indexing.samples import enriched_event
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.runtime.stage import StageContext
from ragline.store.rls import scoped_transaction

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def embedder(stack):
    stage = EmbedderStage(stack, EmbedderSettings())
    await stage.start()  # loads the model once for the session (~5-10 s)
    yield stage
    await stage.stop()


def ctx(stack) -> StageContext:
    return StageContext(settings=stack, logger=logging.getLogger("test.embedder"))


def embedded(result) -> DocEmbedded:
    if isinstance(result, BaseException):
        raise result
    (out,) = result
    assert out.topic == Topics.DOC_EMBEDDED
    return out.event


def children(ev):
    return [c for c in ev.chunks if c.level is ChunkLevel.CHILD]


async def test_real_model_vectors_are_normalized_and_recorded(stack, embedder, tenant):
    ev = enriched_event(
        tenant_id=tenant,
        document_id="wiki:cats",
        source_seq=1,
        texts=[
            "Cats are small domesticated felines that purr.",
            "Kittens are young cats and love to play.",
            "The quarterly tax filing deadline is in April.",
        ],
        title="Animals and taxes",
    )
    out = embedded((await embedder.handle_batch([ev], ctx(stack)))[0])
    assert out.embedding_model == DEFAULT_MODEL_NAME and out.embedding_dim == 384
    # the configured backend's identity: onnx-int8 by default, its artifact's sha included
    assert out.embedding_revision == configured_identity(EmbedderSettings())[1]
    assert len(out.embedding_revision) in (16, 38)  # torch: the weights' revision only
    vecs = np.asarray([c.embedding for c in children(out)], dtype=np.float32)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.1  # cats/kittens closer than cats/taxes


async def test_cache_means_only_changed_chunks_are_re_embedded(stack, embedder, tenant):
    tag = uuid.uuid4().hex[:8]
    texts = [f"Section {i} of the {tag} runbook explains step {i}." for i in range(6)]
    v1 = enriched_event(
        tenant_id=tenant, document_id="wiki:runbook", source_seq=1, texts=texts, title="Runbook"
    )
    stats = embedder.batcher.stats
    computed0, cached0 = stats.computed, stats.cached
    model_metric0 = CHUNKS_EMBEDDED.labels("model")._value.get()
    first = embedded((await embedder.handle_batch([v1], ctx(stack)))[0])
    assert stats.computed - computed0 == 6
    # re-ingest with one edited paragraph (a new source_seq, re-chunked)
    texts2 = [*texts[:3], f"Section 3 of the {tag} runbook was rewritten.", *texts[4:]]
    v2 = enriched_event(
        tenant_id=tenant, document_id="wiki:runbook", source_seq=2, texts=texts2, title="Runbook"
    )
    second = embedded((await embedder.handle_batch([v2], ctx(stack)))[0])
    assert stats.computed - computed0 == 7
    assert stats.cached - cached0 == 5
    assert CHUNKS_EMBEDDED.labels("model")._value.get() - model_metric0 == 7
    # cached vectors are the computed ones
    a, b = children(first), children(second)
    assert a[0].embedding == b[0].embedding and a[3].embedding != b[3].embedding
    # and they live in Postgres, keyed by model + revision + text hash (the last poll's
    # write runs in the background: flush waits for it, as the stage's close does)
    assert await embedder.batcher.flush() is True
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM embedding_cache WHERE model = %s AND revision = %s",
            (first.embedding_model, first.embedding_revision),
        )
        assert (await cur.fetchone())[0] >= 7


async def test_micro_batch_across_documents_uses_few_model_calls(stack, embedder, tenant):
    tag = uuid.uuid4().hex[:8]
    events = [
        enriched_event(
            tenant_id=tenant,
            document_id=f"kb:{i}",
            source_seq=1,
            texts=[f"{tag} article {i} part {j}" for j in range(4)],
        )
        for i in range(12)
    ]
    calls0 = embedder.batcher.stats.model_calls
    results = await embedder.handle_batch(events, ctx(stack))
    assert all(not isinstance(r, BaseException) for r in results)
    assert embedder.batcher.stats.model_calls - calls0 == 1  # 48 texts, one batch of 64


async def test_embedded_output_is_searchable_by_vector_under_rls(stack, embedder, tenant):
    texts = {
        "wiki:vpn": "To connect to the VPN, install the client and sign in with SSO.",
        "wiki:lunch": "The cafeteria serves lunch from noon until two o'clock.",
        "wiki:parking": "Employee parking permits are renewed every January.",
    }
    events = [
        enriched_event(
            tenant_id=tenant, document_id=d, source_seq=1, texts=[t], acl_groups=("staff",)
        )
        for d, t in texts.items()
    ]
    outs = [embedded(r) for r in await embedder.handle_batch(events, ctx(stack))]
    indexer = IndexerStage(stack, IndexerSettings())
    await indexer.start()
    try:
        results = await indexer.handle_batch(outs, ctx(stack))
        assert all(not isinstance(r, BaseException) for r in results)
    finally:
        await indexer.stop()
    query = np.asarray(embedder._embedder.encode(["how do I log in to the vpn"])[0])
    async with await psycopg.AsyncConnection.connect(stack.query_dsn()) as conn:
        await register_vector_async(conn)
        sql = (
            "SELECT document_id, embedding_model FROM chunks WHERE level = 'child'"
            " ORDER BY embedding <=> %s LIMIT 1"
        )
        async with scoped_transaction(conn, tenant_id=tenant, groups=["staff"]):
            cur = await conn.execute(sql, (query,))
            assert await cur.fetchone() == ("wiki:vpn", DEFAULT_MODEL_NAME)
        async with scoped_transaction(conn, tenant_id=tenant, groups=["contractors"]):
            cur = await conn.execute(sql, (query,))
            assert await cur.fetchone() is None
