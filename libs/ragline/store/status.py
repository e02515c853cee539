"""The ``document_status`` table: where each document is, written with a seq guard.

A row is only overwritten by an event whose source_seq is >= the stored one, so a late
retry of an old version cannot hide the state of a newer one. The row also carries the
newest ACL its writers knew (``acl_groups``/``acl_seq``, migration 0007): the query role
reads a status through it when the document was never indexed, so the ACL is guarded by
its own seq, like ``documents.acl_seq``, and a write without an ACL keeps the stored one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from ragline.store.pg_errors import pg_errors

__all__ = [
    "StatusAcl",
    "StatusValue",
    "newest_acl",
    "reassert_status",
    "set_status_acl",
    "write_status",
]

StatusValue = Literal["accepted", "indexed", "quarantined", "deleted", "failed"]
StatusAcl = tuple[tuple[str, ...], int]  # (acl_groups, acl_seq)


def newest_acl(*candidates: tuple[Sequence[str], int] | None) -> StatusAcl | None:
    """The candidate with the highest seq (the earliest one on a tie); None if none given.

    Callers pass the event's own ACL first, then what Postgres already holds (the
    documents row, a pending ACL change), so a newer ACL change is never undone.
    """
    best: StatusAcl | None = None
    for c in candidates:
        if c is not None and (best is None or c[1] > best[1]):
            best = (tuple(c[0]), c[1])
    return best


async def write_status(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    source_seq: int,
    status: StatusValue,
    stage: str,
    content_hash: str | None = None,
    reason_code: str | None = None,
    reason: str | None = None,
    findings: dict[str, Any] | None = None,
    acl: StatusAcl | None = None,
) -> bool:
    """Upsert the status row unless a newer seq is stored; True when it was written.

    ``acl`` (groups, acl_seq) replaces the stored ACL only if its seq is not older; None
    keeps the stored one (a delete). An identical rewrite at the same seq is a no-op
    (``updated_at`` untouched), so a replay leaves the table exactly as it was.
    """
    groups, acl_seq = (list(acl[0]), acl[1]) if acl is not None else (None, None)
    with pg_errors():
        cur = await conn.execute(
            "INSERT INTO document_status AS s (tenant_id, document_id, source_seq,"
            " content_hash, stage, status, reason_code, reason, findings, acl_groups, acl_seq,"
            " updated_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now())"
            " ON CONFLICT (tenant_id, document_id) DO UPDATE SET"
            " source_seq = EXCLUDED.source_seq, content_hash = EXCLUDED.content_hash,"
            " stage = EXCLUDED.stage, status = EXCLUDED.status,"
            " reason_code = EXCLUDED.reason_code, reason = EXCLUDED.reason,"
            " findings = EXCLUDED.findings, updated_at = now(),"
            " acl_groups = CASE WHEN EXCLUDED.acl_seq >= coalesce(s.acl_seq, -1)"
            "   THEN EXCLUDED.acl_groups ELSE s.acl_groups END,"
            " acl_seq = greatest(s.acl_seq, EXCLUDED.acl_seq)"
            " WHERE s.source_seq < EXCLUDED.source_seq OR (s.source_seq = EXCLUDED.source_seq"
            " AND ((s.content_hash, s.stage, s.status, s.reason_code, s.reason, s.findings)"
            " IS DISTINCT FROM (EXCLUDED.content_hash, EXCLUDED.stage, EXCLUDED.status,"
            " EXCLUDED.reason_code, EXCLUDED.reason, EXCLUDED.findings)"
            " OR EXCLUDED.acl_seq > coalesce(s.acl_seq, -1)))"
            " RETURNING 1",
            (
                tenant_id,
                document_id,
                source_seq,
                content_hash,
                stage,
                status,
                reason_code,
                reason,
                Jsonb(findings) if findings is not None else None,
                groups,
                acl_seq,
            ),
        )
        return await cur.fetchone() is not None


async def set_status_acl(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    acl_seq: int,
    acl_groups: Sequence[str],
) -> bool:
    """An ACL change: re-stamp the status row unless it holds a newer ACL already; True
    when a row was changed. No row is created (the status says where the content is)."""
    with pg_errors():
        cur = await conn.execute(
            "UPDATE document_status SET acl_groups = %s, acl_seq = %s"
            " WHERE tenant_id = %s AND document_id = %s"
            " AND (acl_seq IS NULL OR acl_seq < %s)",
            (list(acl_groups), acl_seq, tenant_id, document_id, acl_seq),
        )
    return cur.rowcount > 0


async def reassert_status(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    source_seq: int,
    status: StatusValue,
    stage: str,
) -> bool:
    """Put back the status of the version already applied at ``source_seq`` when intake
    (a replayed ``accepted``) overwrote it; a no-op otherwise."""
    with pg_errors():
        cur = await conn.execute(
            "UPDATE document_status SET status = %s, stage = %s, reason_code = NULL,"
            " reason = NULL, updated_at = now()"
            " WHERE tenant_id = %s AND document_id = %s AND source_seq = %s"
            " AND status = 'accepted'",
            (status, stage, tenant_id, document_id, source_seq),
        )
    return cur.rowcount > 0
