"""Which versions of a series a later version had already replaced on a date.

An as-of search keeps, per document series, only the version in force on the date: the
latest one already effective and not yet expired. Filtering by date alone lets every
older version that never got an expiry date through too, and picking the newest among
the *ranked candidates* afterwards cannot bring back a version the ranking cut (an older
one then answers). So the older versions are excluded **in the databases, before
ranking**: one read of the ``documents`` table under RLS (served by the
``(tenant_id, series_id)`` index of 0003_core.sql) names the versions a later in-force
version of their series shadows, and the search excludes them in Postgres and in
OpenSearch alike (``filters.ExcludedTerms``). A version the caller cannot see never
shadows one it can: RLS decides what the caller's history is.
"""

from __future__ import annotations

from datetime import date

from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.retrieval.scope import rls_transaction

__all__ = ["SHADOWED_SQL", "shadowed_versions"]

# d: a version in force on the date; n: a later version of its series, also in force
SHADOWED_SQL = (
    "SELECT d.document_id FROM documents d"
    " WHERE d.status = 'indexed' AND d.series_id IS NOT NULL"
    "   AND (d.effective_date IS NULL OR d.effective_date <= %(at)s)"
    "   AND (d.expiry_date IS NULL OR d.expiry_date > %(at)s)"
    "   AND EXISTS (SELECT 1 FROM documents n"
    "     WHERE n.tenant_id = d.tenant_id AND n.series_id = d.series_id"
    "       AND n.status = 'indexed' AND n.document_id <> d.document_id"
    "       AND n.effective_date IS NOT NULL AND n.effective_date <= %(at)s"
    "       AND (n.expiry_date IS NULL OR n.expiry_date > %(at)s)"
    "       AND (d.effective_date IS NULL OR n.effective_date > d.effective_date))"
    " ORDER BY d.document_id LIMIT %(cap)s"
)


async def shadowed_versions(
    pool: AsyncConnectionPool, principal: Principal, at: date, *, cap: int = 10_000
) -> tuple[str, ...] | None:
    """Document ids replaced within their series on ``at``; None past ``cap`` (then the
    candidate-level ``resolve_series`` alone keeps one version per series)."""
    async with rls_transaction(pool, principal) as conn:
        cur = await conn.execute(SHADOWED_SQL, {"at": at, "cap": cap + 1})
        ids = tuple(str(r[0]) for r in await cur.fetchall())
    return None if len(ids) > cap else ids
