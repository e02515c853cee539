"""Rebuild and repair the OpenSearch copy from Postgres (the truth).

``reindex`` (blue-green): open a shadow physical index for the tenant (from then on
every indexer write also goes to it, ``OsSyncer``), fill it from Postgres, re-sync the
documents whose revision moved while it was filled, then flip the tenant alias to it in
one ``_aliases`` call; the index it replaces is kept as the rollback
(``os_index.roll_back``) until ``retire_rollback`` or the next reindex.
``repair``: sync the documents whose ``os_revision`` lags ``revision`` (an OpenSearch
write failed after Postgres committed); with ``deep``, also compare per-document chunk
counts and revisions in OpenSearch against Postgres and delete orphans, which catches
a server that lost data without Postgres knowing (the in-memory server after a restart).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opensearchpy import AsyncOpenSearch
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from ragline.indexing.metrics import OS_LAGGING
from ragline.indexing.os_sync import OsSyncer
from ragline.indexing.projection import os_source
from ragline.store.chunks import fetch_children
from ragline.store.documents import lagging_documents
from ragline.store.os_bulk import bulk_index, delete_documents
from ragline.store.os_client import os_errors
from ragline.store.os_index import (
    alias_targets,
    drop_indexes,
    flip_shadow,
    open_shadow,
    rollback_alias,
)
from ragline.store.pg_errors import pg_errors

__all__ = ["ReindexReport", "RepairReport", "Repairer"]

Progress = Callable[[int], None]  # advances a progress bar by n documents


def _noop(_: int) -> None:
    return None


@dataclass
class ReindexReport:
    tenant_id: str
    index: str
    documents: int = 0
    chunks: int = 0
    resynced: int = 0
    dropped: list[str] = field(default_factory=list)  # older rollbacks, deleted
    rollback: list[str] = field(default_factory=list)  # the replaced index, kept


@dataclass
class RepairReport:
    lagging: int = 0
    mismatched: int = 0
    orphans: int = 0
    synced: int = 0


class Repairer:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        client: AsyncOpenSearch,
        syncer: OsSyncer,
        *,
        page: int = 200,
    ) -> None:
        self.pool = pool
        self.client = client
        self.syncer = syncer
        self.page = page

    async def tenants(self) -> list[str]:
        with pg_errors():
            async with self.pool.connection() as conn:
                cur = await conn.execute("SELECT DISTINCT tenant_id FROM documents ORDER BY 1")
                return [str(r[0]) for r in await cur.fetchall()]

    async def count_documents(self, tenant_id: str | None, *, live_only: bool) -> int:
        with pg_errors():
            async with self.pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT count(*) FROM documents WHERE (%s::text IS NULL OR tenant_id = %s)"
                    " AND (NOT %s OR status = 'indexed')",
                    (tenant_id, tenant_id, live_only),
                )
                row = await cur.fetchone()
        return int(row[0]) if row else 0

    # ------------------------------------------------------------------ reindex
    async def reindex(self, tenant_id: str, progress: Progress = _noop) -> ReindexReport:
        alias = self.syncer.index_for(tenant_id)
        concrete = await open_shadow(self.client, alias)
        report = ReindexReport(tenant_id=tenant_id, index=concrete)
        filled: dict[str, int] = {}
        after = ""
        while True:
            async with self.pool.connection() as conn:
                page = await self._fill_page(conn, tenant_id, concrete, after, filled, report)
            progress(len(page))
            if len(page) < self.page:
                break
            after = page[-1]
        # moved while filling: the live writers wrote them to the shadow too, re-synced
        # here so the shadow is complete before it goes live
        report.resynced = await self._catch_up(tenant_id, filled)
        with os_errors():
            await self.client.indices.refresh(index=concrete)
        if not await alias_targets(self.client, alias):
            with os_errors():  # an index squatting on the alias name (no atomic way out)
                await self.client.indices.delete(index=alias, ignore_unavailable=True)
        _, report.dropped = await flip_shadow(self.client, alias)
        report.rollback = await alias_targets(self.client, rollback_alias(alias))
        self.syncer.forget_indexes()
        await drop_indexes(self.client, report.dropped)
        return report

    async def _fill_page(
        self,
        conn: AsyncConnection,
        tenant_id: str,
        concrete: str,
        after: str,
        filled: dict[str, int],
        report: ReindexReport,
    ) -> list[str]:
        """One page of live documents into the new index, read from one snapshot."""
        with pg_errors():
            async with conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cur = await conn.execute(
                    "SELECT document_id, revision FROM documents WHERE tenant_id = %s"
                    " AND status = 'indexed' AND document_id > %s ORDER BY document_id LIMIT %s",
                    (tenant_id, after, self.page),
                )
                revs = {str(d): int(r) for d, r in await cur.fetchall()}
                rows = await fetch_children(conn, tenant_id, sorted(revs)) if revs else []
        docs = [(str(r["chunk_id"]), os_source(r, revs[r["document_id"]])) for r in rows]
        await bulk_index(
            self.client,
            concrete,
            docs,
            refresh="false",
            batch_size=self.syncer.bulk_size,
            require_alias=False,
        )
        filled.update(revs)
        report.documents += len(revs)
        report.chunks += len(docs)
        return sorted(revs)

    async def _catch_up(self, tenant_id: str, filled: dict[str, int]) -> int:
        """Documents that changed while the copy was built: sync them through the alias;
        the rest are now exactly their filled revision in OpenSearch."""
        with pg_errors():
            async with self.pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT document_id, revision, status FROM documents WHERE tenant_id = %s",
                    (tenant_id,),
                )
                rows = [(str(d), int(r), str(s)) for d, r, s in await cur.fetchall()]
        # moved: filled at another revision, or live but not filled (created meanwhile);
        # a tombstone that was never filled is already right (absent)
        moved = [d for d, r, s in rows if filled.get(d, None if s == "indexed" else r) != r]
        same = [(filled[d], tenant_id, d) for d, r, _ in rows if filled.get(d) == r]
        async with self.pool.connection() as conn:
            for start in range(0, len(moved), self.page):
                await self.syncer.sync(
                    conn, tenant_id, moved[start : start + self.page], force=True
                )
            with pg_errors():
                async with conn.transaction(), conn.cursor() as c:
                    await c.executemany(
                        "UPDATE documents SET os_revision = greatest(os_revision, %s)"
                        " WHERE tenant_id = %s AND document_id = %s",
                        same,
                    )
            with pg_errors():  # tombstones: nothing of them is in the fresh index
                await conn.execute(
                    "UPDATE documents SET os_revision = revision WHERE tenant_id = %s"
                    " AND status = 'deleted' AND os_revision < revision",
                    (tenant_id,),
                )
                await conn.commit()
        return len(moved)

    # ------------------------------------------------------------------ repair
    async def repair(
        self, tenant_id: str | None = None, *, deep: bool = False, progress: Progress = _noop
    ) -> RepairReport:
        report = RepairReport()
        async with self.pool.connection() as conn:
            while True:
                lag = await lagging_documents(conn, tenant_id=tenant_id, limit=self.page)
                await conn.commit()
                if not lag:
                    break
                report.lagging += len(lag)
                by_tenant: dict[str, list[str]] = {}
                for t, d in lag:
                    by_tenant.setdefault(t, []).append(d)
                synced = 0
                for t, docs in by_tenant.items():
                    result = await self.syncer.sync(conn, t, docs, force=True)
                    synced += result.documents
                report.synced += synced
                progress(len(lag))
                if synced == 0:  # nothing could be synced: do not spin
                    break
        if deep:
            for t in [tenant_id] if tenant_id else await self.tenants():
                await self._deep(t, report, progress)
        OS_LAGGING.set(0)
        return report

    async def _os_inventory(self, tenant_id: str) -> dict[str, tuple[int, int, int]]:
        """Per document in OpenSearch: (chunks, min revision, max revision)."""
        index = self.syncer.index_for(tenant_id)
        inv: dict[str, list[int]] = {}
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": 1000,
                "sort": [{"chunk_id": "asc"}],
                "_source": ["document_id", "revision"],
                "query": {"match_all": {}},
            }
            if after is not None:
                body["search_after"] = after
            with os_errors():
                resp = await self.client.search(index=index, body=body, ignore_unavailable=True)
            hits = resp.get("hits", {}).get("hits", [])
            for h in hits:
                d, rev = str(h["_source"]["document_id"]), int(h["_source"]["revision"])
                cur = inv.setdefault(d, [0, rev, rev])
                cur[0] += 1
                cur[1] = min(cur[1], rev)
                cur[2] = max(cur[2], rev)
            if len(hits) < 1000:
                break
            after = hits[-1]["sort"]
        return {d: (v[0], v[1], v[2]) for d, v in inv.items()}

    async def _deep(self, tenant_id: str, report: RepairReport, progress: Progress) -> None:
        inventory = await self._os_inventory(tenant_id)
        with pg_errors():
            async with self.pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT d.document_id, d.status, d.revision,"
                    " (SELECT count(*) FROM chunks c WHERE c.tenant_id = d.tenant_id"
                    "  AND c.document_id = d.document_id AND c.level = 'child')"
                    " FROM documents d WHERE d.tenant_id = %s",
                    (tenant_id,),
                )
                truth = {str(d): (str(s), int(r), int(n)) for d, s, r, n in await cur.fetchall()}
        wrong: list[str] = []
        for doc, (status, rev, n) in truth.items():
            want = (n, rev, rev) if status == "indexed" and n else None
            if inventory.get(doc) != want:
                wrong.append(doc)
        orphans = sorted(set(inventory) - set(truth))
        report.mismatched += len(wrong)
        report.orphans += len(orphans)
        async with self.pool.connection() as conn:
            for start in range(0, len(wrong), self.page):
                result = await self.syncer.sync(
                    conn, tenant_id, wrong[start : start + self.page], force=True
                )
                report.synced += result.documents
        if orphans:
            await delete_documents(
                self.client, self.syncer.index_for(tenant_id), orphans, refresh=self.syncer.refresh
            )
        progress(len(truth))
