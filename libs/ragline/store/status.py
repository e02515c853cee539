"""The ``document_status`` table: where each document is, written with a seq guard.

A row is only overwritten by an event whose source_seq is >= the stored one, so a late
retry of an old version cannot hide the state of a newer one.
"""

from __future__ import annotations

from typing import Any, Literal

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from ragline.store.pg_errors import pg_errors

__all__ = ["StatusValue", "reassert_status", "write_status"]

StatusValue = Literal["accepted", "indexed", "quarantined", "deleted", "failed"]


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
) -> bool:
    """Upsert the status row unless a newer seq is stored; True when it was written.

    An identical rewrite at the same seq is a no-op (``updated_at`` untouched), so a
    replay leaves the table exactly as it was.
    """
    with pg_errors():
        cur = await conn.execute(
            "INSERT INTO document_status AS s (tenant_id, document_id, source_seq,"
            " content_hash, stage, status, reason_code, reason, findings, updated_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, now())"
            " ON CONFLICT (tenant_id, document_id) DO UPDATE SET"
            " source_seq = EXCLUDED.source_seq, content_hash = EXCLUDED.content_hash,"
            " stage = EXCLUDED.stage, status = EXCLUDED.status,"
            " reason_code = EXCLUDED.reason_code, reason = EXCLUDED.reason,"
            " findings = EXCLUDED.findings, updated_at = now()"
            " WHERE s.source_seq < EXCLUDED.source_seq OR (s.source_seq = EXCLUDED.source_seq"
            " AND (s.content_hash, s.stage, s.status, s.reason_code, s.reason, s.findings)"
            " IS DISTINCT FROM (EXCLUDED.content_hash, EXCLUDED.stage, EXCLUDED.status,"
            " EXCLUDED.reason_code, EXCLUDED.reason, EXCLUDED.findings))"
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
            ),
        )
        return await cur.fetchone() is not None


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
