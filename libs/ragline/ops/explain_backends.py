"""Opening what the explainer and the console's playground run on: an admin pool, the
RLS-bound query pool, OpenSearch and the query embedder. One opener, so the CLI and
the console search exactly as the query service does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from opensearchpy import AsyncOpenSearch
from psycopg_pool import AsyncConnectionPool

from ragline.config import EmbeddingModelSettings, Settings
from ragline.ops.explain import Explainer
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder, QueryEmbedder
from ragline.retrieval.lexical import LexicalSearcher
from ragline.retrieval.service import SearchBackends, SearchService
from ragline.retrieval.settings import QuerySettings
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool

__all__ = ["OpsBackends", "open_ops_backends"]


@dataclass(kw_only=True)
class OpsBackends:
    admin: AsyncConnectionPool
    os_client: AsyncOpenSearch
    search: SearchBackends
    explainer: Explainer
    service: SearchService  # the playground's search: the query service's, audit on


@asynccontextmanager
async def open_ops_backends(
    settings: Settings,
    qs: QuerySettings,
    *,
    model: EmbeddingModelSettings | None = None,
    embedder: QueryEmbedder | None = None,
    admin_max: int = 4,
) -> AsyncIterator[OpsBackends]:
    """``embedder`` may be given (tests share one); else the shared model is loaded."""
    own: ModelQueryEmbedder | None = None
    if embedder is None:
        path = qs.ranking.embedding_model_path
        own = await ModelQueryEmbedder.load(
            model or EmbeddingModelSettings(),
            location=str(path) if path else None,
            torch_threads=qs.torch_threads,
        )
        embedder = CachedEmbedder(own, size=qs.embedding_cache_size)
    admin = await open_pool(settings.admin_dsn(), name="ops-admin", max_size=admin_max)
    query = await open_pool(settings.query_dsn(), name="ops-query", max_size=4)
    client = make_client(settings, timeout_s=qs.backend_timeout_s)
    try:
        backends = SearchBackends(
            pool=query,
            lexical=LexicalSearcher(client, index_prefix=settings.opensearch_index_prefix),
            embedder=embedder,
        )
        yield OpsBackends(
            admin=admin,
            os_client=client,
            search=backends,
            explainer=Explainer(admin, backends, qs),
            service=SearchService(backends, qs),
        )
    finally:
        await client.close()
        await query.close()
        await admin.close()
        if own is not None:
            own.close()
