"""Documents nobody can read: indexed (or on their way) with no ``acl_groups``.

Deny by default keeps them out of every answer, which is right and invisible: a user
gets 404s and the operator has nothing to look at. This lists them (status
``no_readers``) with what the pipeline holds, for ``ragline documents no-readers``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection, sql

from ragline.connector.readers import NO_READERS
from ragline.store.pg_errors import pg_errors

__all__ = ["NoReadersRow", "list_no_readers"]

# the status row's ACL is the document's newest (the version accepted or indexed,
# docs/connector.md); a row without one falls back to the documents row's
_QUERY = sql.SQL(
    "SELECT s.document_id, s.status, d.title, s.updated_at "
    "FROM document_status s LEFT JOIN documents d "
    "  ON d.tenant_id = s.tenant_id AND d.document_id = s.document_id "
    "WHERE s.tenant_id = %(t)s AND starts_with(s.document_id, %(p)s) "
    "  AND s.status IN ('accepted', 'indexed') "
    "  AND cardinality(coalesce(s.acl_groups, d.acl_groups, '{}'::text[])) = 0 "
    "ORDER BY s.document_id LIMIT %(n)s"
)


@dataclass(frozen=True, kw_only=True)
class NoReadersRow:
    document_id: str
    pipeline_status: str  # 'indexed', or 'accepted' (on its way)
    title: str | None
    updated_at: datetime | None
    status: str = NO_READERS

    def to_json(self) -> dict[str, Any]:
        return {
            "document_id": self.document_id,
            "status": self.status,
            "pipeline_status": self.pipeline_status,
            "title": self.title,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }


async def list_no_readers(
    conn: AsyncConnection[Any], tenant_id: str, *, source: str | None = None, limit: int = 1000
) -> list[NoReadersRow]:
    """The tenant's documents (of ``source`` if given) that no group may read."""
    prefix = f"{source}:" if source else ""
    with pg_errors():
        cur = await conn.execute(_QUERY, {"t": tenant_id, "p": prefix, "n": limit})
        rows = await cur.fetchall()
    return [
        NoReadersRow(document_id=d, pipeline_status=st, title=title, updated_at=at)
        for d, st, title, at in rows
    ]
