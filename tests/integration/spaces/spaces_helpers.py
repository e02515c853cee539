"""Seeding the spaces tests' installs the way the indexer writes (IndexWriter)."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg_pool import AsyncConnectionPool

from ragline.indexing.samples import embedded_event
from ragline.indexing.writer import IndexWriter

TOPICS = (
    "invoices are paid within thirty days of receipt",
    "the gateway rejects tokens older than one hour",
    "parental leave is sixteen weeks for every employee",
    "backups run nightly and are kept for ninety days",
    "the on-call engineer acknowledges pages within five minutes",
    "travel must be booked through the approved agency",
    "passwords rotate every ninety days for service accounts",
    "the data warehouse refreshes at two in the morning",
)


def texts(doc: int, n: int) -> list[str]:
    return [f"{TOPICS[(doc + i) % len(TOPICS)]} (document {doc}, part {i})" for i in range(n)]


async def seed(
    pool: AsyncConnectionPool,
    tenant: str,
    docs: int,
    children: int,
    *,
    groups: Sequence[str] = ("everyone",),
) -> list[str]:
    writer = IndexWriter(consumer="spaces-tests")
    ids = []
    async with pool.connection() as conn:
        for d in range(docs):
            doc_id = f"doc:{d}"
            ev = embedded_event(
                tenant_id=tenant,
                document_id=doc_id,
                source_seq=1,
                texts=texts(d, children),
                title=f"Handbook {d}",
                acl_groups=tuple(groups),
            )
            await writer.apply(conn, ev)
            ids.append(doc_id)
    return ids
