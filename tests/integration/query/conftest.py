"""Query service fixtures: one seeded corpus per session (two tenants, two groups,
versions, a deleted and a future document), the FastAPI app in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest_asyncio
from query_corpus import delete, main_corpus, other_tenant_corpus, seed
from query_helpers import GROUP_A, GROUP_B, Corpus, query_settings, running_app

from ragline.config import EmbeddingModelSettings, Settings
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder, QueryEmbedder
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def embedder() -> AsyncIterator[QueryEmbedder]:
    inner = await ModelQueryEmbedder.load(EmbeddingModelSettings())
    yield CachedEmbedder(inner, size=8192)
    inner.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def corpus(stack: Settings, embedder: QueryEmbedder) -> Corpus:
    tenant, other = unique_tenant("q"), unique_tenant("q")
    pool = await open_pool(stack.admin_dsn(), name="query-seed")
    client = make_client(stack)
    try:
        main = main_corpus(GROUP_A, GROUP_B)
        prefix = stack.opensearch_index_prefix
        await seed(pool, client, prefix, tenant, main, embedder)
        await seed(pool, client, prefix, other, other_tenant_corpus(GROUP_A), embedder)
        await delete(pool, client, prefix, tenant, "tmp:deleted")
    finally:
        await client.close()
        await pool.close()
    live = [d for d in main if d.document_id != "tmp:deleted"]
    visible = {
        (tenant, g): frozenset(d.document_id for d in live if g in d.groups)
        for g in (GROUP_A, GROUP_B)
    }
    visible[(other, GROUP_A)] = frozenset(d.document_id for d in other_tenant_corpus(GROUP_A))
    return Corpus(
        tenant=tenant,
        other_tenant=other,
        visible=visible,
        all_docs=frozenset(d.document_id for d in main),
    )


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def client(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder
) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(stack, query_settings(), embedder) as (_, c):
        yield c
