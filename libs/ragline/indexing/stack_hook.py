"""``ragline stack up`` hook: OpenSearch is in-memory locally, so when ``up`` (re)started
it, rebuild every tenant's index from Postgres; otherwise only repair lagging documents.
"""

from __future__ import annotations

from ragline.indexing.os_sync import OsSyncer
from ragline.indexing.repair import Repairer
from ragline.indexing.settings import IndexerSettings
from ragline.runtime.stack.hooks import PostUpContext
from ragline.runtime.stack.settings import Component
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool

__all__ = ["rebuild_opensearch"]


async def rebuild_opensearch(ctx: PostUpContext) -> str | None:
    settings = ctx.settings
    config = IndexerSettings()
    pool = await open_pool(settings.admin_dsn(), name="stack-hook", max_size=2)
    client = make_client(settings, timeout_s=config.os_timeout_s)
    try:
        syncer = OsSyncer(
            client,
            index_prefix=settings.opensearch_index_prefix,
            refresh="false",
            bulk_size=config.os_bulk_size,
        )
        rep = Repairer(pool, client, syncer)
        if Component.OPENSEARCH in ctx.started:
            docs = chunks = 0
            tenants = await rep.tenants()
            for tenant in tenants:
                report = await rep.reindex(tenant)
                docs += report.documents
                chunks += report.chunks
            if not tenants:
                return None
            return (
                f"opensearch rebuilt from postgres: {len(tenants)} tenant(s), "
                f"{docs} documents, {chunks} chunks"
            )
        repaired = await rep.repair()
        return f"opensearch repair: {repaired.synced} lagging document(s) synced"
    finally:
        await client.close()
        await pool.close()
