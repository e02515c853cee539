"""Bring OpenSearch in line with Postgres (the truth) for a set of documents.

The OpenSearch copy of a document is a projection of its Postgres rows: child chunks
indexed by chunk_id and stamped with the document's ``revision``, then everything of
that document with an older revision deleted (previous generations, vanished chunks);
a tombstoned document loses all its chunks. It runs in one Postgres transaction holding
the documents' advisory locks, so no writer of those documents interleaves, and records
``os_revision`` on success. Upserts, ACL re-stamps, supersession marks, ``ragline
repair`` and ``ragline reindex`` all go through here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opensearchpy import AsyncOpenSearch
from psycopg import AsyncConnection

from ragline.indexing.projection import os_source
from ragline.store.chunks import fetch_children, withdraw_documents
from ragline.store.documents import lock_documents
from ragline.store.os_bulk import (
    BulkResult,
    IndexMissing,
    Refresh,
    bulk_index,
    delete_documents,
    delete_stale,
)
from ragline.store.os_client import os_errors
from ragline.store.os_index import ensure_index, index_name, shadow_alias
from ragline.store.pg_errors import pg_errors

__all__ = ["OsSyncer", "SyncResult"]


@dataclass(frozen=True, kw_only=True)
class SyncResult:
    documents: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0
    # document id -> why OpenSearch rejected one of its chunks for good (a mapping
    # rejection): none of its chunks stays in the index or in Postgres (withdrawn), and
    # its os_revision stays behind
    rejected: dict[str, str] = field(default_factory=dict)


class OsSyncer:
    """Projects documents of one tenant from Postgres into that tenant's index."""

    def __init__(
        self,
        client: AsyncOpenSearch,
        *,
        index_prefix: str,
        refresh: Refresh,
        bulk_size: int = 500,
    ) -> None:
        self.client = client
        self.prefix = index_prefix
        self.refresh = refresh
        self.bulk_size = bulk_size
        self._known_indexes: set[str] = set()

    def index_for(self, tenant_id: str) -> str:
        return index_name(self.prefix, tenant_id)

    async def ensure(self, tenant_id: str) -> str:
        name = self.index_for(tenant_id)
        if name not in self._known_indexes:
            await ensure_index(self.client, name)
            self._known_indexes.add(name)
        return name

    def forget_indexes(self) -> None:
        """After an index was dropped elsewhere (reindex), re-check before writing."""
        self._known_indexes.clear()

    async def sync(
        self,
        conn: AsyncConnection,
        tenant_id: str,
        document_ids: Sequence[str],
        *,
        force: bool = False,
        fresh_index: bool = False,
    ) -> SyncResult:
        """Sync the documents whose OpenSearch copy lags (all of them with ``force``).

        ``fresh_index``: the index was just created empty, so skip the stale deletes.
        Raises TransientError/BackendUnavailable/PermanentError; on any error the
        transaction rolls back and os_revision stays behind, so ``repair`` finds it.
        """
        ids = sorted(set(document_ids))
        if not ids:
            return SyncResult()
        async with conn.transaction():
            await lock_documents(conn, tenant_id, ids)
            with pg_errors():
                cur = await conn.execute(
                    "SELECT document_id, status, revision, os_revision FROM documents"
                    " WHERE tenant_id = %s AND document_id = ANY(%s)",
                    (tenant_id, ids),
                )
                states = await cur.fetchall()
            todo = [(str(d), str(s), int(r)) for d, s, r, osr in states if force or osr < r]
            if not todo:
                return SyncResult()
            index = await self.ensure(tenant_id)
            live = {d: r for d, s, r in todo if s == "indexed"}
            dead = [d for d, s, _ in todo if s != "indexed"]
            rows = await fetch_children(conn, tenant_id, sorted(live)) if live else []
            docs = [
                (str(row["chunk_id"]), os_source(row, live[row["document_id"]])) for row in rows
            ]
            try:
                bulk = await self._bulk(index, docs)
            except IndexMissing:  # the alias vanished (deleted by hand): recreate, retry once
                self._known_indexes.discard(index)
                index = await self.ensure(tenant_id)
                bulk = await self._bulk(index, docs)
            doc_of = {str(row["chunk_id"]): str(row["document_id"]) for row in rows}
            rejected: dict[str, str] = {}
            for cid, why in sorted(bulk.rejected.items()):
                rejected.setdefault(doc_of[cid], why)
            deleted = 0
            if rejected:  # no partial copy of a rejected document stays searchable,
                # in either leg: its Postgres chunks go too (same transaction, documents
                # locked), so the dense leg cannot find what the status calls quarantined
                deleted += await delete_documents(
                    self.client, index, sorted(rejected), refresh=self.refresh
                )
                await withdraw_documents(conn, tenant_id, sorted(rejected))
                live = {d: r for d, r in live.items() if d not in rejected}
                todo = [t for t in todo if t[0] not in rejected]
            if not fresh_index:
                if live:
                    deleted += await delete_stale(
                        self.client, index, sorted(live.items()), refresh=self.refresh
                    )
                if dead:
                    deleted += await delete_documents(
                        self.client, index, dead, refresh=self.refresh
                    )
            await self._shadow_write(index, docs, live, dead, rejected)
            with pg_errors():
                async with conn.cursor() as c:
                    await c.executemany(
                        "UPDATE documents SET os_revision = greatest(os_revision, %s)"
                        " WHERE tenant_id = %s AND document_id = %s",
                        [(rev, tenant_id, doc) for doc, _, rev in todo],
                    )
        return SyncResult(
            documents=len(todo),
            chunks_written=bulk.written,
            chunks_deleted=deleted,
            rejected=rejected,
        )

    async def _shadow_write(
        self,
        alias: str,
        docs: list[tuple[str, dict[str, Any]]],
        live: dict[str, int],
        dead: list[str],
        rejected: dict[str, str],
    ) -> None:
        """The same projection into the tenant's shadow index, when one is being built
        (blue-green, ``os_index.open_shadow``), so it is complete when it is flipped."""
        shadow = shadow_alias(alias)
        with os_errors():
            if not await self.client.indices.exists_alias(name=shadow):
                return
        keep = [(cid, src) for cid, src in docs if src.get("document_id") not in rejected]
        await bulk_index(self.client, shadow, keep, refresh=self.refresh, batch_size=self.bulk_size)
        if live:
            await delete_stale(self.client, shadow, sorted(live.items()), refresh=self.refresh)
        gone = sorted({*dead, *rejected})
        if gone:
            await delete_documents(self.client, shadow, gone, refresh=self.refresh)

    async def _bulk(self, index: str, docs: list[tuple[str, dict[str, Any]]]) -> BulkResult:
        return await bulk_index(
            self.client,
            index,
            docs,
            refresh=self.refresh,
            batch_size=self.bulk_size,
            allow_rejects=True,
        )
