"""Superseded versions: a document listing others in ``supersedes`` marks them superseded.

Parallel versions of one series (v3.9 and v4.2 both current) stay current: only an
explicit ``supersedes`` marks a document. The mark is order-independent: a superseded
document that arrives after its successor is marked on arrival, and deleting the
successor releases its predecessors. The flag is denormalized onto chunks by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import AsyncConnection

from ragline.store.pg_errors import pg_errors

__all__ = ["mark_superseded", "release_superseded", "superseding_document"]


async def superseding_document(
    conn: AsyncConnection, tenant_id: str, document_id: str
) -> str | None:
    """The live document that supersedes ``document_id``, if any (deterministic pick)."""
    with pg_errors():
        cur = await conn.execute(
            "SELECT document_id FROM documents WHERE tenant_id = %s AND status = 'indexed'"
            " AND %s = ANY(supersedes) AND document_id <> %s ORDER BY document_id LIMIT 1",
            (tenant_id, document_id, document_id),
        )
        row = await cur.fetchone()
    return None if row is None else str(row[0])


async def mark_superseded(
    conn: AsyncConnection, tenant_id: str, targets: Sequence[str], by: str
) -> list[str]:
    """Mark the live ``targets`` superseded by ``by``; returns the ids that changed."""
    targets = [t for t in targets if t != by]
    if not targets:
        return []
    with pg_errors():
        cur = await conn.execute(
            "UPDATE documents SET superseded = true, superseded_by = %s,"
            " revision = revision + 1, updated_at = now()"
            " WHERE tenant_id = %s AND document_id = ANY(%s) AND status = 'indexed'"
            " AND (NOT superseded OR superseded_by IS DISTINCT FROM %s)"
            " RETURNING document_id",
            (by, tenant_id, list(targets), by),
        )
        changed = [str(r[0]) for r in await cur.fetchall()]
        if changed:
            await conn.execute(
                "UPDATE chunks SET superseded = true WHERE tenant_id = %s"
                " AND document_id = ANY(%s)",
                (tenant_id, changed),
            )
    return sorted(changed)


async def release_superseded(conn: AsyncConnection, tenant_id: str, by: str) -> list[str]:
    """``by`` is gone (deleted, or no longer lists them): re-evaluate what it superseded.

    A predecessor another live document still supersedes moves to that one; the rest
    become current again. Returns the ids that changed.
    """
    with pg_errors():
        cur = await conn.execute(
            "WITH cand AS ("
            "  SELECT d.document_id, ("
            "    SELECT s.document_id FROM documents s WHERE s.tenant_id = d.tenant_id"
            "      AND s.status = 'indexed' AND s.document_id <> %s"
            "      AND d.document_id = ANY(s.supersedes)"
            "    ORDER BY s.document_id LIMIT 1) AS other"
            "  FROM documents d WHERE d.tenant_id = %s AND d.superseded_by = %s"
            "    AND NOT (d.document_id = ANY(coalesce(("
            "      SELECT b.supersedes FROM documents b WHERE b.tenant_id = %s"
            "        AND b.document_id = %s AND b.status = 'indexed'), '{}'))))"
            " UPDATE documents u SET superseded = (cand.other IS NOT NULL),"
            "   superseded_by = cand.other, revision = u.revision + 1, updated_at = now()"
            " FROM cand WHERE u.tenant_id = %s AND u.document_id = cand.document_id"
            " RETURNING u.document_id, u.superseded",
            (by, tenant_id, by, tenant_id, by, tenant_id),
        )
        rows = await cur.fetchall()
        for flag in (True, False):
            ids = [str(d) for d, s in rows if bool(s) is flag]
            if ids:
                await conn.execute(
                    "UPDATE chunks SET superseded = %s WHERE tenant_id = %s"
                    " AND document_id = ANY(%s)",
                    (flag, tenant_id, ids),
                )
    return sorted(str(d) for d, _ in rows)
