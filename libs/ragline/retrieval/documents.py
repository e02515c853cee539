"""Document metadata and ingestion status, read under RLS.

The database decides what is visible: a status row is readable when its own ACL
(written by the pipeline from the source's ACL, 0007_status_acl.sql) or the document
row admits the principal. So the owners of a document quarantined before it was ever
indexed (no document row) see why it is not searchable, and everybody else gets the
same "not found" as for a document that does not exist (docs/query.md).

A deleted document is gone for every reader: ``get_document`` finds nothing of it (its
status still says 'deleted' to the groups that could read it). ``superseded_by`` names
the successor only when the caller can read it (RLS decides, in the same query).
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
            " series_id, effective_date, expiry_date, superseded,"
            " (SELECT s.document_id FROM documents s WHERE s.tenant_id = d.tenant_id"
            "   AND s.document_id = d.superseded_by AND s.status = 'indexed') AS superseded_by,"
            " classification, trust, generation, chunk_count, findings, created_at, updated_at,"
            " indexed_at, deleted_at FROM documents d"
            " WHERE tenant_id = %s AND document_id = %s AND status = 'indexed'",
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
        # either side may be hidden by RLS (or absent): at most one row each, joined on true
        await cur.execute(
            "SELECT coalesce(s.document_id, d.document_id) AS document_id,"
            " d.status AS doc_status, s.status, s.stage, s.reason_code, s.reason, s.findings,"
            " s.source_seq, s.updated_at"
            " FROM (SELECT * FROM document_status"
            "       WHERE tenant_id = %(t)s AND document_id = %(d)s) s"
            " FULL JOIN (SELECT document_id, status FROM documents"
            "            WHERE tenant_id = %(t)s AND document_id = %(d)s) d ON true",
            {"t": principal.tenant, "d": document_id},
        )
        row = await cur.fetchone()
    if row is None:
        return None
    if row["status"] is None:
        row["status"] = row["doc_status"]
    row["never_indexed"] = row["doc_status"] is None
    row["findings"] = _findings_summary(row["findings"])
    return DocumentStatusResponse(**row)
