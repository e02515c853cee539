"""Restore OpenSearch from Postgres (the truth): rebuild every tenant's index when the
search server came back empty (the local stack's in-memory server after a restart),
otherwise only repair documents whose OpenSearch copy lags. ``ragline up`` and
``ragline stack up`` run it (``ragline.platform.stack.hooks``).
"""

from __future__ import annotations

from ragline.config import Settings
from ragline.indexing.os_sync import OsSyncer
from ragline.indexing.repair import Repairer
from ragline.indexing.settings import IndexerSettings
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool

__all__ = ["restore_opensearch"]


async def restore_opensearch(
    settings: Settings, config: IndexerSettings, *, rebuild: bool
) -> str | None:
    """A one-line summary, or None when a rebuild found no tenant."""
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
        if rebuild:
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
