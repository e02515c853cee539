"""``ragline cache stats|sweep|flush``: look at and tend the answer cache (admin DSN).

Exit codes: 0 done, 1 a backend failed (the message says which).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from psycopg import AsyncConnection

from ragline.cache.settings import CacheSettings
from ragline.cache.sweeper import count_entries, flush, sweep
from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.store.pg_errors import pg_errors

__all__ = ["register"]

Job = Callable[[AsyncConnection, argparse.Namespace], Awaitable[int]]

_STATS = """SELECT count(*), coalesce(sum(size_bytes), 0), coalesce(sum(hits), 0),
       count(*) FILTER (WHERE expires_at <= now()), count(DISTINCT scope_hash)
FROM answer_cache WHERE %(t)s::text IS NULL OR tenant_id = %(t)s"""


async def _stats(conn: AsyncConnection, args: argparse.Namespace) -> int:
    with pg_errors():
        async with conn.transaction():
            cur = await conn.execute(_STATS, {"t": args.tenant})
            row = await cur.fetchone()
    assert row is not None
    entries, size, hits, expired, scopes = row
    cs = CacheSettings()
    print(
        f"entries {entries} ({expired} expired) in {scopes} scopes, {size} bytes, "
        f"{hits} hits served; enabled={cs.enabled} freshness={cs.freshness} "
        f"threshold={cs.similarity_threshold} ttl_s={cs.ttl_s:g}"
    )
    return 0


async def _sweep(conn: AsyncConnection, args: argparse.Namespace) -> int:
    cs = CacheSettings()
    report = await sweep(conn, max_entries_per_tenant=cs.max_entries_per_tenant)
    print(
        f"expired {report.expired}, over the size bound {report.over_bound}, "
        f"{report.entries} entries left"
    )
    return 0


async def _flush(conn: AsyncConnection, args: argparse.Namespace) -> int:
    n = await flush(conn, args.tenant)
    left = await count_entries(conn)
    print(f"flushed {n} entries; {left} left")
    return 0


def _runner(job: Job) -> Callable[[argparse.Namespace], int]:
    async def main(args: argparse.Namespace) -> int:
        with pg_errors():
            conn = await AsyncConnection.connect(Settings().admin_dsn())
        async with conn:
            return await job(conn, args)

    def run(args: argparse.Namespace) -> int:
        try:
            return asyncio.run(main(args))
        except RaglineError as exc:
            print(f"ragline cache: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1

    return run


def register(sub: Any) -> None:
    p = sub.add_parser("cache", help="inspect and tend the answer cache")
    ops = p.add_subparsers(dest="cache_command", required=True)
    s = ops.add_parser("stats", help="entries, size, hits, expired")
    s.add_argument("--tenant", help="only this tenant")
    s.set_defaults(func=_runner(_stats))
    w = ops.add_parser("sweep", help="delete expired entries and enforce the size bound now")
    w.set_defaults(func=_runner(_sweep))
    f = ops.add_parser("flush", help="evict every entry (of one tenant): after a reindex")
    f.add_argument("--tenant", help="only this tenant")
    f.set_defaults(func=_runner(_flush))
