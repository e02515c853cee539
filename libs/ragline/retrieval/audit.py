"""The search audit trail: one append-only row per search (migrations/0020_query_audit.sql).

Records who asked what (the query's sha256, or its text when the policy says so), with
which filters, and which chunks came back; never the evidence text. The row is written
as the query role inside the principal's RLS scope, which only lets it insert rows of
its own tenant.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from ragline.auth.principal import Principal
from ragline.hashing import sha256_hex
from ragline.store.pg_errors import pg_errors

__all__ = ["AuditRecord", "query_hash", "sweep_audit", "write_audit"]


def query_hash(queries: Sequence[str]) -> str:
    return sha256_hex(json.dumps(list(queries), ensure_ascii=False))


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    principal: Principal
    trace_id: str
    queries: tuple[str, ...]
    mode: str
    request: dict[str, Any]
    chunk_ids: tuple[str, ...]
    document_ids: tuple[str, ...]
    cache: str
    abstained: bool
    abstain_reason: str | None
    degraded: tuple[str, ...] = ()
    latency_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


async def write_audit(
    conn: AsyncConnection, record: AuditRecord, *, store_query: Literal["text", "hash"]
) -> None:
    """Insert the row (``conn`` inside ``rls_transaction`` for ``record.principal``)."""
    p = record.principal
    text = "\n".join(record.queries) if store_query == "text" else None
    with pg_errors():
        await conn.execute(
            "INSERT INTO query_audit (tenant_id, subject, groups, trace_id, query_hash,"
            " query_text, query_count, mode, request, chunk_ids, document_ids, cache,"
            " abstained, abstain_reason, degraded, latency_ms)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                p.tenant,
                p.subject,
                list(p.groups),
                record.trace_id,
                query_hash(record.queries),
                text,
                len(record.queries),
                record.mode,
                Jsonb(record.request),
                list(record.chunk_ids),
                list(record.document_ids),
                record.cache,
                record.abstained,
                record.abstain_reason,
                list(record.degraded),
                record.latency_ms,
            ),
        )


def sweep_audit(admin_dsn: str, retention_days: int) -> int:
    """Delete audit rows older than the retention (admin DSN); returns the count."""
    with pg_errors(), psycopg.connect(admin_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT query_audit_sweep(%s)", (retention_days,)).fetchone()
    return int(row[0]) if row else 0
