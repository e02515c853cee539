"""ACL changes that overtook a document's first upsert (the control fast path is quicker
than embedding). Kept until that upsert arrives; applied by it when newer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import AsyncConnection

from ragline.store.pg_errors import pg_errors

__all__ = ["PendingAcl", "delete_pending_acl", "get_pending_acl", "put_pending_acl"]


@dataclass(frozen=True, kw_only=True)
class PendingAcl:
    acl_seq: int
    acl_groups: tuple[str, ...]
    classification: str | None


async def get_pending_acl(
    conn: AsyncConnection, tenant_id: str, document_id: str
) -> PendingAcl | None:
    with pg_errors():
        cur = await conn.execute(
            "SELECT acl_seq, acl_groups, classification FROM pending_acl"
            " WHERE tenant_id = %s AND document_id = %s",
            (tenant_id, document_id),
        )
        row = await cur.fetchone()
    if row is None:
        return None
    return PendingAcl(acl_seq=int(row[0]), acl_groups=tuple(row[1]), classification=row[2])


async def put_pending_acl(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    acl_seq: int,
    acl_groups: Sequence[str],
    classification: str | None,
) -> bool:
    """Store the change unless a newer one is kept (at an equal seq the later change
    wins, ragline.order); True when stored."""
    with pg_errors():
        cur = await conn.execute(
            "INSERT INTO pending_acl AS p (tenant_id, document_id, acl_seq, acl_groups,"
            " classification) VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (tenant_id, document_id) DO UPDATE SET acl_seq = EXCLUDED.acl_seq,"
            " acl_groups = EXCLUDED.acl_groups,"
            " classification = coalesce(EXCLUDED.classification, p.classification),"
            " updated_at = now() WHERE p.acl_seq < EXCLUDED.acl_seq"
            " OR (p.acl_seq = EXCLUDED.acl_seq"
            " AND (p.acl_groups, p.classification) IS DISTINCT FROM"
            " (EXCLUDED.acl_groups, coalesce(EXCLUDED.classification, p.classification)))"
            " RETURNING 1",
            (tenant_id, document_id, acl_seq, list(acl_groups), classification),
        )
        return await cur.fetchone() is not None


async def delete_pending_acl(conn: AsyncConnection, tenant_id: str, document_id: str) -> None:
    """The document row now carries the ACL: the pending entry has been applied."""
    with pg_errors():
        await conn.execute(
            "DELETE FROM pending_acl WHERE tenant_id = %s AND document_id = %s",
            (tenant_id, document_id),
        )
