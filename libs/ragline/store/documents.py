"""The ``documents`` table: per-document state, the seq guards and tombstones.

Every write happens inside the caller's transaction after ``lock_document``, a
transaction-scoped advisory lock that serializes all writers of one document (the
content path and the control fast path may run in different indexer replicas).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ragline.store.pg_errors import pg_errors
from ragline.store.sql_text import rendered

__all__ = [
    "DOCUMENT_COLUMNS",
    "DocumentState",
    "get_state",
    "lagging_documents",
    "lock_document",
    "lock_documents",
    "set_acl",
    "tombstone",
    "upsert_document",
]

# columns an upsert writes (besides the keys and the bookkeeping timestamps)
DOCUMENT_COLUMNS: tuple[str, ...] = (
    "content_hash",
    "meta_hash",
    "source_seq",
    "acl_seq",
    "acl_rank",
    "generation",
    "revision",
    "status",
    "title",
    "uri",
    "source_type",
    "mime_type",
    "language",
    "version",
    "series_id",
    "supersedes",
    "effective_date",
    "expiry_date",
    "superseded",
    "superseded_by",
    "acl_groups",
    "classification",
    "trust",
    "metadata",
    "findings",
    "chunk_count",
)
_JSON_COLUMNS = frozenset({"metadata", "findings"})


@dataclass(frozen=True, kw_only=True)
class DocumentState:
    """What the guards need to know about the stored document."""

    tenant_id: str
    document_id: str
    status: str
    content_hash: str | None
    source_seq: int
    acl_seq: int
    acl_rank: int
    generation: int
    revision: int
    os_revision: int
    acl_groups: tuple[str, ...]
    classification: str | None
    superseded: bool
    superseded_by: str | None
    chunk_count: int


async def lock_document(conn: AsyncConnection, tenant_id: str, document_id: str) -> None:
    """Serialize writers of one document until the end of the current transaction."""
    with pg_errors():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"{tenant_id}\x1f{document_id}",),
        )


async def lock_documents(conn: AsyncConnection, tenant_id: str, document_ids: list[str]) -> None:
    """``lock_document`` for many documents in one round trip, in a fixed order (no
    deadlock between two lockers of overlapping sets)."""
    keys = sorted({f"{tenant_id}\x1f{d}" for d in document_ids})
    with pg_errors():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(k, 0))"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i",
            (keys,),
        )


async def get_state(
    conn: AsyncConnection, tenant_id: str, document_id: str
) -> DocumentState | None:
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            "SELECT tenant_id, document_id, status, content_hash, source_seq, acl_seq,"
            " acl_rank, generation, revision, os_revision, acl_groups, classification, superseded,"
            " superseded_by, chunk_count"
            " FROM documents WHERE tenant_id = %s AND document_id = %s",
            (tenant_id, document_id),
        )
        row = await cur.fetchone()
    if row is None:
        return None
    row["acl_groups"] = tuple(row["acl_groups"] or ())
    return DocumentState(**row)


def _value(column: str, value: Any) -> Any:
    return Jsonb(value) if column in _JSON_COLUMNS and value is not None else value


def _upsert_composed(cols: tuple[str, ...]) -> sql.Composed:
    ident = [sql.Identifier(c) for c in cols]
    return sql.SQL(
        "INSERT INTO documents (tenant_id, document_id, {cols}, updated_at, indexed_at,"
        " deleted_at) VALUES (%s, %s, {vals}, now(), now(), NULL)"
        " ON CONFLICT (tenant_id, document_id) DO UPDATE SET {sets},"
        " updated_at = now(), indexed_at = now(), deleted_at = NULL"
    ).format(
        cols=sql.SQL(", ").join(ident),
        vals=sql.SQL(", ").join(sql.Placeholder() * len(cols)),
        sets=sql.SQL(", ").join(sql.SQL("{c} = EXCLUDED.{c}").format(c=i) for i in ident),
    )


@lru_cache(maxsize=64)
def _upsert_query(cols: tuple[str, ...]) -> sql.SQL:
    """The documents upsert for ``cols``, composed once per set of columns."""
    return rendered(_upsert_composed(cols))


async def upsert_document(
    conn: AsyncConnection, tenant_id: str, document_id: str, values: Mapping[str, Any]
) -> None:
    """Insert or overwrite the document row with ``values`` (keys from DOCUMENT_COLUMNS).

    The caller has already checked the seq guards under ``lock_document``.
    """
    cols = [c for c in DOCUMENT_COLUMNS if c in values]
    unknown = set(values) - set(DOCUMENT_COLUMNS)
    if unknown:
        raise ValueError(f"unknown document columns: {sorted(unknown)}")
    query = _upsert_query(tuple(cols))
    params = [tenant_id, document_id, *(_value(c, values[c]) for c in cols)]
    with pg_errors():
        await conn.execute(query, params)


async def tombstone(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    source_seq: int,
    generation: int,
    revision: int,
) -> None:
    """Mark the document deleted at ``source_seq`` (creating the row if it never existed).

    Everything about the document is dropped (content hash, title, uri, version, series,
    dates, metadata, findings: a deleted document is gone for every reader); only the
    seqs and the ACL stay, so an older upsert arriving late cannot resurrect it.
    """
    with pg_errors():
        await conn.execute(
            "INSERT INTO documents (tenant_id, document_id, source_seq, generation, revision,"
            " status, deleted_at, chunk_count)"
            " VALUES (%s, %s, %s, %s, %s, 'deleted', now(), 0)"
            " ON CONFLICT (tenant_id, document_id) DO UPDATE SET"
            " source_seq = EXCLUDED.source_seq, generation = EXCLUDED.generation,"
            " revision = EXCLUDED.revision, status = 'deleted', deleted_at = now(),"
            " content_hash = NULL, meta_hash = NULL, findings = NULL,"
            " metadata = '{}'::jsonb, chunk_count = 0, superseded = false,"
            " superseded_by = NULL, supersedes = '{}', title = NULL, uri = NULL,"
            " version = NULL, series_id = NULL, mime_type = NULL, language = NULL,"
            " source_type = NULL, trust = NULL, effective_date = NULL, expiry_date = NULL,"
            " indexed_at = NULL, updated_at = now()",
            (tenant_id, document_id, source_seq, generation, revision),
        )


async def set_acl(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    acl_seq: int,
    acl_rank: int,
    acl_groups: Sequence[str],
    classification: str | None,
    revision: int,
) -> None:
    with pg_errors():
        await conn.execute(
            "UPDATE documents SET acl_seq = %s, acl_rank = %s, acl_groups = %s,"
            " classification = coalesce(%s, classification), revision = %s, updated_at = now()"
            " WHERE tenant_id = %s AND document_id = %s",
            (
                acl_seq,
                acl_rank,
                list(acl_groups),
                classification,
                revision,
                tenant_id,
                document_id,
            ),
        )


async def lagging_documents(
    conn: AsyncConnection, *, tenant_id: str | None, limit: int
) -> list[tuple[str, str]]:
    """(tenant, document) pairs whose OpenSearch copy is behind Postgres."""
    with pg_errors():
        cur = await conn.execute(
            "SELECT tenant_id, document_id FROM documents"
            " WHERE os_revision < revision AND (%s::text IS NULL OR tenant_id = %s)"
            " ORDER BY tenant_id, document_id LIMIT %s",
            (tenant_id, tenant_id, limit),
        )
        rows = await cur.fetchall()
    return [(str(t), str(d)) for t, d in rows]
