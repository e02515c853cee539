"""Document metadata and ingestion status, read under RLS.

The status row has no ACL of its own (0003_core.sql), so it is shown only when the
principal can see the document row too: a user must not learn the status, findings or
quarantine reason of a document they cannot read. (A document quarantined before it
was ever indexed has no document row and is therefore not visible here; see
docs/query.md.)
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row

from ragline.auth.principal import Principal
from ragline.retrieval.api_models import DocumentResponse, DocumentStatusResponse
from ragline.store.pg_errors import pg_errors

__all__ = ["get_document", "get_status"]


def _findings_summary(value: Any) -> dict[str, Any] | None:
    """Counts and block positions only (the stored summary never holds values)."""
    if not isinstance(value, dict):
        return None
    return {k: value[k] for k in ("counts", "injection_blocks", "policy") if k in value}


async def get_document(
    conn: AsyncConnection, principal: Principal, document_id: str
) -> DocumentResponse | None:
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            "SELECT document_id, status, title, uri, source_type, mime_type, language, version,"
            " series_id, effective_date, expiry_date, superseded, superseded_by, classification,"
            " trust, generation, chunk_count, findings, created_at, updated_at, indexed_at,"
            " deleted_at FROM documents WHERE tenant_id = %s AND document_id = %s",
            (principal.tenant, document_id),
        )
        row = await cur.fetchone()
    if row is None:
        return None
    row["findings"] = _findings_summary(row["findings"])
    return DocumentResponse(**row)


async def get_status(
    conn: AsyncConnection, principal: Principal, document_id: str
) -> DocumentStatusResponse | None:
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            "SELECT d.document_id, d.status AS doc_status, s.status, s.stage, s.reason_code,"
            " s.reason, s.findings, s.source_seq, s.updated_at"
            " FROM documents d LEFT JOIN document_status s"
            " ON s.tenant_id = d.tenant_id AND s.document_id = d.document_id"
            " WHERE d.tenant_id = %s AND d.document_id = %s",
            (principal.tenant, document_id),
        )
        row = await cur.fetchone()
    if row is None:
        return None
    doc_status = row.pop("doc_status")
    if row["status"] is None:
        row["status"] = doc_status
    row["findings"] = _findings_summary(row["findings"])
    return DocumentStatusResponse(**row)
