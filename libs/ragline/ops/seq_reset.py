"""Resetting a document's sequence: the way out when one bad event (a ``source_seq`` of
2^63-1, a source that restarted its counter) made every later change stale.

One transaction under the document's lock (the indexer's advisory lock, so no write of
the document interleaves): ``documents.source_seq``/``acl_seq``, ``document_status``,
``pending_acl`` and the document's ledger entries above the new value are moved down to
it, and a row in ``seq_resets`` records who did it, from what, and why. Content, ACL and
chunks are untouched: the next change above the new value replaces them as usual.
The document's reset generation (``document_status.seq_epoch``) goes up in the same
transaction: events accepted before the reset (a downstream or DLQ replay) are refused
as stale by the indexer; the source's changes accepted from now on are applied
(lifetest F14, docs/adr/0008 amendment 2026-12-01).
docs/operations.md, "Resetting a document's sequence".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from ragline.errors import ConfigError, RaglineError
from ragline.store.documents import lock_document
from ragline.store.pg_errors import pg_errors
from ragline.store.seq_epoch import bump_epoch

__all__ = ["SeqReset", "reset_seq"]


@dataclass(frozen=True, kw_only=True)
class SeqReset:
    tenant_id: str
    document_id: str
    old_source_seq: int | None
    old_acl_seq: int | None
    old_status_seq: int | None
    new_seq: int
    ledger_entries_dropped: int
    seq_epoch: int  # the document's reset generation from now on

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


async def reset_seq(
    conn: psycopg.AsyncConnection[Any],
    *,
    tenant_id: str,
    document_id: str,
    to: int,
    actor: str,
    reason: str,
) -> SeqReset:
    """Move the document's sequences down to ``to`` (never up) and audit it."""
    if to < 0:
        raise ConfigError("--to must be >= 0")
    if not reason.strip() or not actor.strip():
        raise ConfigError("a reset needs an actor and a reason (they are audited)")
    async with conn.transaction():
        await lock_document(conn, tenant_id, document_id)
        with pg_errors():
            cur = await conn.execute(
                "SELECT d.source_seq, d.acl_seq, s.source_seq FROM (SELECT 1) one"
                " LEFT JOIN documents d ON d.tenant_id = %(t)s AND d.document_id = %(d)s"
                " LEFT JOIN document_status s ON s.tenant_id = %(t)s AND s.document_id = %(d)s",
                {"t": tenant_id, "d": document_id},
            )
            row = await cur.fetchone()
            assert row is not None
            old_seq, old_acl, old_status = row
            if old_seq is None and old_status is None:
                raise RaglineError(f"{tenant_id}/{document_id}: no such document")
            p = {"t": tenant_id, "d": document_id, "n": to}
            await conn.execute(
                "UPDATE documents SET source_seq = least(source_seq, %(n)s),"
                " acl_seq = least(acl_seq, %(n)s), updated_at = now()"
                " WHERE tenant_id = %(t)s AND document_id = %(d)s",
                p,
            )
            await conn.execute(
                "UPDATE document_status SET source_seq = least(source_seq, %(n)s),"
                " acl_seq = least(acl_seq, %(n)s), updated_at = now()"
                " WHERE tenant_id = %(t)s AND document_id = %(d)s",
                p,
            )
            await conn.execute(
                "UPDATE pending_acl SET acl_seq = least(acl_seq, %(n)s)"
                " WHERE tenant_id = %(t)s AND document_id = %(d)s",
                p,
            )
            cur = await conn.execute(
                "DELETE FROM processed_events WHERE tenant_id = %(t)s AND document_id = %(d)s"
                " AND source_seq > %(n)s",
                p,
            )
            dropped = cur.rowcount
            epoch = await bump_epoch(conn, tenant_id, document_id)
            await conn.execute(
                "INSERT INTO seq_resets (tenant_id, document_id, old_source_seq, old_acl_seq,"
                " old_status_seq, new_seq, actor, reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (tenant_id, document_id, old_seq, old_acl, old_status, to, actor, reason),
            )
    return SeqReset(
        tenant_id=tenant_id,
        document_id=document_id,
        old_source_seq=old_seq,
        old_acl_seq=old_acl,
        old_status_seq=old_status,
        new_seq=to,
        ledger_entries_dropped=dropped,
        seq_epoch=epoch,
    )
