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

A change the connector accepted before the reset and the indexer has not applied yet
(the status row says ``accepted``; or an ACL change recorded as accepted, migration 0130)
is of the old generation, so the indexer will refuse it: the reset makes that visible
instead of leaving the status ``accepted`` for ever. The status row becomes ``failed``
(stage ``reset-seq``, reason code ``reset_seq``, a reason naming the generation and the
fix: re-send it with ``ragline sync``) and the report lists what was refused
(``refused_in_flight``). The row is locked first, so a connector batch writing after the
reset finds the newer generation and decides its change again (docs/adr/0008,
amendment "reset race"). docs/operations.md, "Reset a document's sequence".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from ragline.errors import ConfigError, RaglineError
from ragline.store.documents import lock_document
from ragline.store.pg_errors import pg_errors
from ragline.store.seq_epoch import REFUSED_REASON_CODE, bump_epoch

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
    # changes accepted before the reset and not applied, refused from now on: "content",
    # "delete" (the status row is now 'failed', reason_code 'reset_seq') and/or "acl" (the
    # same, when the row said 'indexed': the ACL change has no status of its own)
    refused_in_flight: tuple[str, ...] = ()

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
            refused = await _in_flight(conn, p)
            await conn.execute(
                "UPDATE documents SET source_seq = least(source_seq, %(n)s),"
                " acl_seq = least(acl_seq, %(n)s), updated_at = now()"
                " WHERE tenant_id = %(t)s AND document_id = %(d)s",
                p,
            )
            # accepted statements are forgotten: what was in flight is refused now
            await conn.execute(
                "UPDATE document_status SET source_seq = least(source_seq, %(n)s),"
                " acl_seq = least(acl_seq, %(n)s), stated_acl_seq = NULL,"
                " stated_acl_rank = NULL, stated_acl_digest = NULL, quarantine_acls = NULL,"
                " updated_at = now()"
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
            if "redelivered" in refused:  # its first delivery was applied: say so again
                refused = tuple(r for r in refused if r != "redelivered")
                await conn.execute(
                    "UPDATE document_status s SET status = d.status, stage = 'indexer',"
                    " content_hash = CASE WHEN d.status = 'deleted' THEN NULL"
                    "  ELSE d.content_hash END, reason_code = NULL, reason = NULL"
                    " FROM documents d WHERE d.tenant_id = s.tenant_id"
                    " AND d.document_id = s.document_id AND s.tenant_id = %(t)s"
                    " AND s.document_id = %(d)s AND s.status = 'accepted'",
                    p,
                )
            if "content" in refused or "delete" in refused:
                await conn.execute(
                    "UPDATE document_status SET status = 'failed', stage = 'reset-seq',"
                    " reason_code = %(rc)s, reason = %(why)s, findings = NULL"
                    " WHERE tenant_id = %(t)s AND document_id = %(d)s AND status = 'accepted'",
                    {**p, "rc": REFUSED_REASON_CODE, "why": _refused_reason(epoch)},
                )
            elif "acl" in refused:  # the row says 'indexed', but the ACL change never lands
                await conn.execute(
                    "UPDATE document_status SET status = 'failed', stage = 'reset-seq',"
                    " reason_code = %(rc)s, reason = %(why)s, findings = NULL"
                    " WHERE tenant_id = %(t)s AND document_id = %(d)s AND status = 'indexed'",
                    {**p, "rc": REFUSED_REASON_CODE, "why": _refused_reason(epoch, acl=True)},
                )
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
        refused_in_flight=refused,
    )


def _refused_reason(epoch: int, *, acl: bool = False) -> str:
    what = "an ACL change " if acl else ""
    kept = " (the indexed version keeps its previous ACL)" if acl else ""
    return (
        f"{what}accepted before `ragline documents reset-seq` started generation {epoch}; "
        f"the indexer refuses it{kept}: re-send the document from the source (`ragline sync`)"
    )


async def _in_flight(conn: psycopg.AsyncConnection[Any], p: dict[str, Any]) -> tuple[str, ...]:
    """What the connector accepted for the document and the indexer has not applied (the
    status row locked until the reset commits, so no connector write slips in between):
    a content change or delete (status 'accepted'; "redelivered" when its key is the one
    the documents row already holds: the same change delivered again after it applied),
    an ACL change (an accepted ACL change statement newer than the documents row's and a
    parked change's ACL key)."""
    cur = await conn.execute(
        "SELECT s.status, s.content_hash, (s.source_seq, s.content_hash IS NULL,"
        "  coalesce(s.content_hash, '')) IS NOT DISTINCT FROM (d.source_seq, d.status = 'deleted',"
        "  CASE WHEN d.status = 'deleted' THEN '' ELSE d.content_hash END),"
        " s.stated_acl_rank = 1"
        " AND NOT coalesce((d.acl_seq, d.acl_rank) >= (s.stated_acl_seq, 1), false)"
        " AND NOT coalesce(pa.acl_seq >= s.stated_acl_seq, false)"
        " FROM document_status s"
        " LEFT JOIN documents d ON d.tenant_id = s.tenant_id AND d.document_id = s.document_id"
        " LEFT JOIN pending_acl pa"
        "  ON pa.tenant_id = s.tenant_id AND pa.document_id = s.document_id"
        " WHERE s.tenant_id = %(t)s AND s.document_id = %(d)s FOR UPDATE OF s",
        p,
    )
    row = await cur.fetchone()
    if row is None:
        return ()
    status, chash, applied, acl = row
    out = []
    if status == "accepted" and applied:  # the applied change again (a redelivery)
        out.append("redelivered")
    elif status == "accepted":
        out.append("content" if chash is not None else "delete")
    if acl:
        out.append("acl")
    return tuple(out)
