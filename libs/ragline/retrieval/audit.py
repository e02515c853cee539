"""The search audit trail: one append-only row per search (migrations/0020_query_audit.sql).

Records who asked what (an HMAC-SHA256 of the query keyed by the deployment secret
``RAGLINE_QUERY_AUDIT_HASH_KEY``, so short queries cannot be recovered by hashing a
dictionary; or its text when the policy says so), with
which filters, and which chunks came back; never the evidence text. The row is written
as the query role inside the principal's RLS scope, which only lets it insert rows of
its own tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from pydantic import SecretStr

from ragline.auth.principal import Principal
from ragline.store.pg_errors import pg_errors

__all__ = ["AuditRecord", "audit_key", "query_hash", "sweep_audit", "write_audit"]

_log = logging.getLogger("ragline.query")
_PROCESS_KEY = secrets.token_bytes(32)
_warned = False


def audit_key(configured: SecretStr | None) -> bytes:
    """The configured key, else a random one for this process (and a warning, once)."""
    global _warned
    if configured is not None and configured.get_secret_value():
        return configured.get_secret_value().encode()
    if not _warned:
        _warned = True
        _log.warning(
            "RAGLINE_QUERY_AUDIT_HASH_KEY is not set: audit query hashes use a per-process "
            "random key and do not compare across replicas or restarts"
        )
    return _PROCESS_KEY


def query_hash(queries: Sequence[str], key: bytes) -> str:
    """HMAC-SHA256 (hex) of the query texts: without the key a hash cannot be confirmed
    against guessed queries."""
    text = json.dumps(list(queries), ensure_ascii=False).encode()
    return hmac.new(key, text, hashlib.sha256).hexdigest()


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
    conn: AsyncConnection,
    record: AuditRecord,
    *,
    store_query: Literal["text", "hash"],
    hash_key: bytes,
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
                query_hash(record.queries, hash_key),
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
