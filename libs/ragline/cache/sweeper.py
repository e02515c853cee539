"""Housekeeping of the answer cache (admin DSN): expired entries out, the per-tenant size
bound enforced by evicting the least recently used (then least hit) entries, the entries
gauge refreshed. Run periodically by the cache invalidator and by ``ragline cache sweep``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from ragline.cache.metrics import ENTRIES, EVICTIONS
from ragline.errors import RaglineError
from ragline.store.pg_errors import pg_errors

__all__ = ["SweepReport", "Sweeper", "count_entries", "flush", "sweep"]

_log = logging.getLogger("ragline.cache")

_EXPIRED = (
    "DELETE FROM answer_cache WHERE entry_id IN ("
    " SELECT entry_id FROM answer_cache WHERE expires_at <= now() LIMIT %s)"
)
_OVER_BOUND = """DELETE FROM answer_cache a USING (
    SELECT entry_id FROM (
        SELECT entry_id, row_number() OVER (
            PARTITION BY tenant_id
            ORDER BY coalesce(last_hit_at, created_at) DESC, hits DESC, entry_id DESC) AS rn
        FROM answer_cache) ranked
    WHERE rn > %s) victims
WHERE a.entry_id = victims.entry_id"""


@dataclass(frozen=True, kw_only=True)
class SweepReport:
    expired: int
    over_bound: int
    entries: int


async def count_entries(conn: AsyncConnection, tenant_id: str | None = None) -> int:
    with pg_errors():
        async with conn.transaction():
            cur = await conn.execute(
                "SELECT count(*) FROM answer_cache WHERE %(t)s::text IS NULL OR tenant_id = %(t)s",
                {"t": tenant_id},
            )
            row = await cur.fetchone()
    return int(row[0]) if row else 0


async def sweep(
    conn: AsyncConnection, *, max_entries_per_tenant: int, batch: int = 5000
) -> SweepReport:
    """One pass; expired rows go in batches so a huge backlog never holds one long lock."""
    expired = 0
    with pg_errors():
        while True:
            async with conn.transaction():
                cur = await conn.execute(_EXPIRED, (batch,))
                n = max(cur.rowcount, 0)
            expired += n
            if n < batch:
                break
        async with conn.transaction():
            cur = await conn.execute(_OVER_BOUND, (max_entries_per_tenant,))
            over = max(cur.rowcount, 0)
    entries = await count_entries(conn)
    EVICTIONS.labels("ttl").inc(expired)
    EVICTIONS.labels("size").inc(over)
    ENTRIES.set(entries)
    return SweepReport(expired=expired, over_bound=over, entries=entries)


async def flush(conn: AsyncConnection, tenant_id: str | None = None) -> int:
    """Evict everything (of one tenant): the manual lever after a reindex or an incident."""
    with pg_errors():
        async with conn.transaction():
            cur = await conn.execute(
                "DELETE FROM answer_cache WHERE %(t)s::text IS NULL OR tenant_id = %(t)s",
                {"t": tenant_id},
            )
            n = max(cur.rowcount, 0)
    EVICTIONS.labels("flush").inc(n)
    return n


class Sweeper:
    """A background task sweeping every ``interval_s``; errors are logged, never fatal."""

    def __init__(
        self, pool: AsyncConnectionPool, *, interval_s: float, max_entries_per_tenant: int
    ) -> None:
        self._pool = pool
        self._interval_s = interval_s
        self._max = max_entries_per_tenant
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="cache-sweeper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run_once(self) -> SweepReport:
        async with self._pool.connection() as conn:
            return await sweep(conn, max_entries_per_tenant=self._max)

    async def _run(self) -> None:
        while True:
            try:
                report = await self.run_once()
                if report.expired or report.over_bound:
                    _log.info(
                        "cache swept",
                        extra={
                            "fields": {
                                "expired": report.expired,
                                "over_bound": report.over_bound,
                                "entries": report.entries,
                            }
                        },
                    )
            except (RaglineError, OSError) as exc:
                _log.warning("cache sweep failed", extra={"fields": {"error": type(exc).__name__}})
            await asyncio.sleep(self._interval_s)
