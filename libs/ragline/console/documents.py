"""The documents page's two repairs, each the code a script would run:

- *repair*: project the document from Postgres (the truth) into OpenSearch again
  (``OsSyncer.sync(force=True)``, what ``ragline repair`` does for lagging documents);
- *re-send*: replay the document's pending dead letters into the pipeline
  (``ragline dlq replay`` restricted to this tenant and document id), in the interactive
  lane: an operator waiting on one document should not queue behind backfills.
"""

from __future__ import annotations

from typing import Any

from opensearchpy import AsyncOpenSearch
from psycopg import AsyncConnection

from ragline.config import Settings
from ragline.console.dead_letters import resolve_dead_letters
from ragline.indexing.os_sync import OsSyncer
from ragline.ops.dlq import Action
from ragline.ops.dlq_select import Selector
from ragline.ops.settings import OpsSettings

__all__ = ["repair_document", "resend_document"]


async def repair_document(
    conn: AsyncConnection, client: AsyncOpenSearch, settings: Settings, tenant: str, doc: str
) -> dict[str, Any]:
    syncer = OsSyncer(client, index_prefix=settings.opensearch_index_prefix, refresh="true")
    res = await syncer.sync(conn, tenant, [doc], force=True)
    return {
        "documents": res.documents,
        "chunks_written": res.chunks_written,
        "chunks_deleted": res.chunks_deleted,
    }


async def resend_document(
    settings: Settings, ops: OpsSettings, tenant: str, doc: str, *, dry_run: bool
) -> dict[str, Any]:
    return await resolve_dead_letters(
        settings,
        ops,
        Action.REPLAY,
        topics=(),
        selector=Selector(tenants=frozenset({tenant}), documents=frozenset({doc})),
        dry_run=dry_run,
        lane="interactive",
    )
