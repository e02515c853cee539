"""The document's reset generation (``document_status.seq_epoch``, migration 0090).

``ragline documents reset-seq`` increments it in the transaction that lowers the seqs;
the connector stamps it on every change it accepts (``EventBase.seq_epoch``) and the
indexer refuses an event of an older generation (``ragline.order.epoch_stale``): a
change accepted before the reset and delivered again downstream (a replay of
``doc.fetched``, a DLQ replay) never re-applies over the changes the reset forgot
(lifetest F14; docs/adr/0008, amendment 2026-12-01).
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from ragline.store.pg_errors import pg_errors

__all__ = ["REFUSED_REASON_CODE", "bump_epoch", "current_epoch"]

# the status reason code of a change accepted before a reset-seq and refused since (its
# status row says 'failed' until a newer change of the document is accepted or indexed)
REFUSED_REASON_CODE = "reset_seq"


async def current_epoch(conn: AsyncConnection[Any], tenant_id: str, document_id: str) -> int:
    """The document's generation (0 for a document never reset or never seen)."""
    with pg_errors():
        cur = await conn.execute(
            "SELECT seq_epoch FROM document_status WHERE tenant_id = %s AND document_id = %s",
            (tenant_id, document_id),
        )
        row = await cur.fetchone()
    return int(row[0]) if row is not None else 0


async def bump_epoch(conn: AsyncConnection[Any], tenant_id: str, document_id: str) -> int:
    """Start the document's next generation (under its lock, in the reset's transaction);
    a document with a ``documents`` row but no status row gets one, stating the row."""
    p = {"t": tenant_id, "d": document_id}
    with pg_errors():
        cur = await conn.execute(
            "UPDATE document_status SET seq_epoch = seq_epoch + 1, updated_at = now()"
            " WHERE tenant_id = %(t)s AND document_id = %(d)s RETURNING seq_epoch",
            p,
        )
        row = await cur.fetchone()
        if row is None:
            cur = await conn.execute(
                "INSERT INTO document_status (tenant_id, document_id, source_seq, content_hash,"
                " stage, status, acl_groups, acl_seq, acl_rank, seq_epoch)"
                " SELECT tenant_id, document_id, source_seq, content_hash, 'reset-seq', status,"
                " acl_groups, acl_seq, acl_rank, 1"
                " FROM documents WHERE tenant_id = %(t)s AND document_id = %(d)s"
                " RETURNING seq_epoch",
                p,
            )
            row = await cur.fetchone()
    return int(row[0]) if row is not None else 0
