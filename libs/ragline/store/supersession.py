"""Superseded versions: a document listing others in ``supersedes`` marks them superseded,
but only where it may (docs/indexing.md, "Supersession"):

* the target is in the same source (the ``<source>:`` prefix of its id) or the same
  series (both carry the same ``series_id``), so a low-trust ticket cannot hide the
  security policy;
* the superseding document's ACL covers the target's (every group that can read the
  target can read its successor), so nobody loses a document to one they cannot read.

Parallel versions of one series (v3.9 and v4.2 both current) stay current: only an
explicit ``supersedes`` marks a document. The mark is recomputed from the stored rows
whenever a document is written, deleted or re-permissioned, so it is order-independent
(a superseded document that arrives after its successor is marked on arrival; deleting
or narrowing the successor releases its predecessors). The flag is denormalized onto
chunks here too.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import AsyncConnection

from ragline.store.pg_errors import pg_errors

__all__ = ["refresh_supersession"]

# for every live candidate target: the first live document that may supersede it
_REFRESH = (
    "WITH cand AS ("
    "  SELECT t.document_id, ("
    "    SELECT s.document_id FROM documents s"
    "     WHERE s.tenant_id = t.tenant_id AND s.status = 'indexed'"
    "       AND s.document_id <> t.document_id AND t.document_id = ANY(s.supersedes)"
    "       AND (split_part(s.document_id, ':', 1) = split_part(t.document_id, ':', 1)"
    "            OR (s.series_id IS NOT NULL AND s.series_id = t.series_id))"
    "       AND t.acl_groups <@ s.acl_groups"
    "     ORDER BY s.document_id LIMIT 1) AS by"
    "  FROM documents t"
    "  WHERE t.tenant_id = %(t)s AND t.status = 'indexed'"
    "    AND (t.document_id = ANY(%(ids)s) OR t.superseded_by = ANY(%(ids)s)"
    "         OR t.document_id IN (SELECT unnest(x.supersedes) FROM documents x"
    "                               WHERE x.tenant_id = %(t)s AND x.document_id = ANY(%(ids)s)))"
    ")"
    " UPDATE documents u SET superseded = (cand.by IS NOT NULL), superseded_by = cand.by,"
    "   revision = u.revision + 1, updated_at = now()"
    " FROM cand WHERE u.tenant_id = %(t)s AND u.document_id = cand.document_id"
    "   AND (u.superseded, u.superseded_by) IS DISTINCT FROM (cand.by IS NOT NULL, cand.by)"
    " RETURNING u.document_id, u.superseded"
)


async def refresh_supersession(
    conn: AsyncConnection, tenant_id: str, document_ids: Sequence[str]
) -> list[str]:
    """Recompute the mark of every live document ``document_ids`` may affect: themselves,
    what they list in ``supersedes`` and what they currently supersede. Returns the ids
    whose mark changed (their OpenSearch copies need the new flag)."""
    ids = sorted(set(document_ids))
    if not ids:
        return []
    with pg_errors():
        cur = await conn.execute(_REFRESH, {"t": tenant_id, "ids": ids})
        rows = await cur.fetchall()
        for flag in (True, False):
            changed = [str(d) for d, s in rows if bool(s) is flag]
            if changed:
                await conn.execute(
                    "UPDATE chunks SET superseded = %s WHERE tenant_id = %s"
                    " AND document_id = ANY(%s)",
                    (flag, tenant_id, changed),
                )
    return sorted(str(d) for d, _ in rows)
