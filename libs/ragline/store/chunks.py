"""The ``chunks`` table: write a generation, drop the previous ones, re-stamp ACLs.

Rows are plain dicts keyed by column name (``CHUNK_COLUMNS``); building them from
events is ``ragline.indexing.projection``'s job. Vectors are numpy float32 arrays
(pgvector's psycopg adapter is registered on every pool connection).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ragline.store.pg_errors import pg_errors
from ragline.store.sql_text import rendered

__all__ = [
    "CHUNK_COLUMNS",
    "EMBEDDING_DIM",
    "OS_FIELDS",
    "delete_document_chunks",
    "delete_other_generations",
    "fetch_children",
    "restamp_acl",
    "withdraw_documents",
    "write_chunks",
]

# chunks.embedding is vector(384) (0003_core.sql): another dimension needs a migration
EMBEDDING_DIM = 384

CHUNK_COLUMNS: tuple[str, ...] = (
    "tenant_id",
    "chunk_id",
    "document_id",
    "generation",
    "parent_id",
    "level",
    "ordinal",
    "text",
    "contextual_header",
    "section_path",
    "content_type",
    "page_start",
    "page_end",
    "line_start",
    "line_end",
    "token_count",
    "metadata",
    "acl_groups",
    "classification",
    "trust",
    "version",
    "series_id",
    "effective_date",
    "expiry_date",
    "superseded",
    "injection_suspect",
    "pii_types",
    "embedding",
    "embedding_model",
    "embedding_revision",
    "language",
    "title",
    "uri",
    "source_type",
)
_KEY = ("tenant_id", "chunk_id")

# the fields of a chunk's OpenSearch document (the strict mapping, store/os_index.py):
# what the projection reads
_NOT_IN_OPENSEARCH = frozenset(
    # children only (no level); no vectors; no metadata blob or line numbers
    {"level", "embedding", "embedding_model", "embedding_revision", "metadata"}
    | {"line_start", "line_end"}
)
OS_FIELDS: tuple[str, ...] = tuple(c for c in CHUNK_COLUMNS if c not in _NOT_IN_OPENSEARCH)


def _insert_query() -> sql.Composed:
    """The chunk upsert (``rendered`` once as ``_INSERT``: an ``executemany`` would compose
    it again for every row)."""
    cols = [sql.Identifier(c) for c in CHUNK_COLUMNS]
    updates = [
        sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(c))
        for c in CHUNK_COLUMNS
        if c not in _KEY
    ]
    return sql.SQL(
        "INSERT INTO chunks ({cols}) VALUES ({vals})"
        " ON CONFLICT (tenant_id, chunk_id) DO UPDATE SET {updates}"
    ).format(
        cols=sql.SQL(", ").join(cols),
        vals=sql.SQL(", ").join(sql.Placeholder() * len(cols)),
        updates=sql.SQL(", ").join(updates),
    )


_INSERT = rendered(_insert_query())


def _params(row: Mapping[str, Any]) -> list[Any]:
    return [Jsonb(row[c]) if c == "metadata" else row.get(c) for c in CHUNK_COLUMNS]


async def write_chunks(conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Upsert chunk rows by (tenant_id, chunk_id) (pipelined executemany)."""
    if not rows:
        return
    with pg_errors():
        async with conn.cursor() as cur:
            await cur.executemany(_INSERT, [_params(r) for r in rows])


async def delete_other_generations(
    conn: AsyncConnection, tenant_id: str, document_id: str, generation: int
) -> int:
    with pg_errors():
        cur = await conn.execute(
            "DELETE FROM chunks WHERE tenant_id = %s AND document_id = %s AND generation <> %s",
            (tenant_id, document_id, generation),
        )
    return cur.rowcount


async def delete_document_chunks(conn: AsyncConnection, tenant_id: str, document_id: str) -> int:
    with pg_errors():
        cur = await conn.execute(
            "DELETE FROM chunks WHERE tenant_id = %s AND document_id = %s",
            (tenant_id, document_id),
        )
    return cur.rowcount


async def withdraw_documents(
    conn: AsyncConnection, tenant_id: str, document_ids: Sequence[str]
) -> int:
    """Take every chunk of these documents out of Postgres (the dense leg and the answer
    cache's freshness check read these rows) and record the document row as holding
    none, touching ``updated_at`` so a strict-fresh cache entry of the scope misses. Used
    when the lexical index refused one of a document's chunks for good: a quarantined
    document leaves both legs, not only the one that refused it. Returns the row count."""
    if not document_ids:
        return 0
    ids = sorted(set(document_ids))
    with pg_errors():
        cur = await conn.execute(
            "DELETE FROM chunks WHERE tenant_id = %s AND document_id = ANY(%s)",
            (tenant_id, ids),
        )
        removed = cur.rowcount
        await conn.execute(
            "UPDATE documents SET chunk_count = 0, updated_at = now()"
            " WHERE tenant_id = %s AND document_id = ANY(%s)",
            (tenant_id, ids),
        )
    return removed


async def restamp_acl(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    acl_groups: Sequence[str],
    classification: str | None,
) -> int:
    """Re-stamp every chunk of the document (no re-embedding); returns the row count."""
    with pg_errors():
        cur = await conn.execute(
            "UPDATE chunks SET acl_groups = %s, classification = coalesce(%s, classification)"
            " WHERE tenant_id = %s AND document_id = %s",
            (list(acl_groups), classification, tenant_id, document_id),
        )
    return cur.rowcount


async def fetch_children(
    conn: AsyncConnection, tenant_id: str, document_ids: Sequence[str]
) -> list[dict[str, Any]]:
    """Child chunk rows (OS_FIELDS, and ``ident_text``: the folded text the identifier
    lookup searches, migration 0150's column or, where it is unfilled, its function) of
    the documents, ordered, for the OpenSearch copy."""
    query = sql.SQL(
        "SELECT {cols}, coalesce(ident_text, ragline_ident_text(title, contextual_header,"
        " text)) AS ident_text FROM chunks WHERE tenant_id = %s AND document_id = ANY(%s)"
        " AND level = 'child' ORDER BY document_id, ordinal, chunk_id"
    ).format(cols=sql.SQL(", ").join(sql.Identifier(c) for c in OS_FIELDS))
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(query, (tenant_id, list(document_ids)))
        return await cur.fetchall()
