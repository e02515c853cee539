"""Bring OpenSearch back in line with Postgres (the truth) when the stack comes up.

OpenSearch keeps its index across restarts (its data lives under the stack's state
directory), so ``up`` does no rebuild: it repairs documents whose OpenSearch copy lags
(an OpenSearch write failed after Postgres committed) and rebuilds only the tenants whose
index is gone altogether (deleted by hand, a wiped data directory): real drift.
``ragline up`` and ``ragline stack up`` run it (``ragline.platform.stack.hooks``);
``ragline index repair --deep`` compares every document.
"""

from __future__ import annotations

from ragline.config import Settings
from ragline.indexing.os_sync import OsSyncer
from ragline.indexing.repair import Repairer
from ragline.indexing.settings import IndexerSettings
from ragline.store.os_client import make_client, os_errors
from ragline.store.pool import open_pool

__all__ = ["restore_opensearch"]


async def restore_opensearch(settings: Settings, config: IndexerSettings) -> str:
    """A one-line summary of what was repaired and rebuilt."""
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
        missing: list[str] = []
        for tenant in await rep.tenants():
            with os_errors():
                present = await client.indices.exists(index=syncer.index_for(tenant))
            if not present:
                missing.append(tenant)
        chunks = 0
        for tenant in missing:
            chunks += (await rep.reindex(tenant)).chunks
        repaired = await rep.repair()
        summary = f"opensearch repair: {repaired.synced} lagging document(s) synced"
        if missing:
            summary += f"; {len(missing)} missing tenant index(es) rebuilt ({chunks} chunks)"
        return summary
    finally:
        await client.close()
        await pool.close()
