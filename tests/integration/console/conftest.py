"""Console and why-not fixtures: the query tests' corpus (written the way the indexer
writes it) in a fresh tenant, plus one document per stored state the explainer names
(quarantined, in flight, failed, without readers, in another tenant only)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "query"))

from console_world import GROUP_A, GROUP_B, SECRET, World
from query_corpus import Doc, delete, main_corpus, other_tenant_corpus, seed

from ragline.config import EmbeddingModelSettings, Settings
from ragline.events import DocQuarantined, DocumentMeta
from ragline.indexing.writer import IndexWriter
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder, QueryEmbedder
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool
from ragline.store.status import write_status


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def console_embedder() -> AsyncIterator[QueryEmbedder]:
    inner = await ModelQueryEmbedder.load(EmbeddingModelSettings())
    yield CachedEmbedder(inner, size=2048)
    inner.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def world(stack: Settings, console_embedder: QueryEmbedder) -> World:
    tenant, other = unique_tenant("cw"), unique_tenant("cw")
    pool = await open_pool(stack.admin_dsn(), name="console-seed")
    client = make_client(stack)
    prefix = stack.opensearch_index_prefix
    try:
        docs = main_corpus(GROUP_A, GROUP_B)
        docs.append(
            Doc(document_id="fs:orphan", title="Orphan", texts=("vacation days orphan",), groups=())
        )
        docs.append(Doc(document_id="fs:empty", title="Empty", texts=(), groups=(GROUP_A,)))
        await seed(pool, client, prefix, tenant, docs, console_embedder)
        only_other = Doc(
            document_id="kb:elsewhere", title="Elsewhere", texts=("vacation",), groups=(GROUP_A,)
        )
        await seed(
            pool,
            client,
            prefix,
            other,
            [*other_tenant_corpus(GROUP_A), only_other],
            console_embedder,
        )
        await delete(pool, client, prefix, tenant, "tmp:deleted")
        writer = IndexWriter(consumer="console-tests")
        async with pool.connection() as conn:
            await writer.apply_quarantine(
                conn,
                DocQuarantined(
                    tenant_id=tenant,
                    document_id="up:blocked",
                    source_seq=1,
                    content_hash="a" * 64,
                    meta=DocumentMeta(title="Blocked", acl_groups=(GROUP_A,)),
                    stage="scanner",
                    reason_code="secret_blocked",
                    reason="a private key was found",
                ),
            )
            for doc, status in (("up:inflight", "accepted"), ("up:failed", "failed")):
                await write_status(
                    conn,
                    tenant,
                    doc,
                    source_seq=1,
                    status=status,  # type: ignore[arg-type]
                    stage="parser",
                    content_hash="b" * 64,
                    reason_code="reset_seq" if status == "failed" else None,
                    acl=((GROUP_A,), 1, 0),
                )
    finally:
        await client.close()
        await pool.close()
    return World(tenant=tenant, other=other)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def console_settings(stack: Settings) -> Settings:
    """The stack's settings with topics of their own (a unique prefix): the console's
    dead-letter actions requeue and commit, which must not disturb other tests' topics."""
    from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics

    s = stack.model_copy(update={"kafka_topic_prefix": f"{unique_tenant('cp')}."})
    await ensure_pipeline_topics(
        s, partitions=1, replication_factor=1, topic_settings=TopicSettings()
    )
    return s


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def console_app(
    console_settings: Settings, world: World, console_embedder: QueryEmbedder
) -> AsyncIterator[object]:
    from ragline.console.settings import ConsoleSettings
    from ragline.ops.settings import OpsSettings
    from ragline.retrieval.settings import QuerySettings
    from services.console.api import create_app

    qs = QuerySettings.from_fields(jwt_secret=SECRET, rate_limit_per_minute=0)
    app = create_app(
        console_settings,
        qs,
        ConsoleSettings(),
        OpsSettings(dlq_group=f"{unique_tenant('cg')}-dlq", dlq_read_timeout_s=5.0),
        embedder=console_embedder,
    )
    async with app.router.lifespan_context(app):
        yield app
