"""TTL sweeping, the size bound (least recently used first), flush and the CLI."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from cache_seed import cache_key, response
from psycopg_pool import AsyncConnectionPool

from ragline.cache.result_cache import PgResultCache
from ragline.cache.settings import CacheSettings
from ragline.cache.sweeper import count_entries, flush, sweep

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


async def put(c: PgResultCache, tenant: str, names: list[str]) -> None:
    for n in names:
        k = cache_key(tenant, ["eng"], f"question {n}")
        assert await c.lookup(k) is None
        await c.store(k, response([]))  # no cited chunks: always fresh


async def n_entries(pool: AsyncConnectionPool, tenant: str) -> int:
    async with pool.connection() as conn:
        return await count_entries(conn, tenant)


async def test_expired_entries_miss_and_are_swept(
    query_pool: AsyncConnectionPool, admin_pool: AsyncConnectionPool, tenant: str
) -> None:
    short = PgResultCache(
        query_pool, CacheSettings(ttl_s=0.5, freshness="dependents"), index_version="v"
    )
    await put(short, tenant, ["a", "b"])
    assert await short.lookup(cache_key(tenant, ["eng"], "question a")) is not None
    await asyncio.sleep(0.8)
    assert await short.lookup(cache_key(tenant, ["eng"], "question a")) is None
    async with admin_pool.connection() as conn:
        report = await sweep(conn, max_entries_per_tenant=10_000)
    assert report.expired >= 2
    assert await n_entries(admin_pool, tenant) == 0


async def test_size_bound_evicts_least_recently_used_first(
    query_pool: AsyncConnectionPool, admin_pool: AsyncConnectionPool, tenant: str
) -> None:
    c = PgResultCache(query_pool, CacheSettings(freshness="dependents"), index_version="v")
    await put(c, tenant, ["1", "2", "3", "4", "5"])
    for n in ("1", "2"):  # used since: these survive
        assert await c.lookup(cache_key(tenant, ["eng"], f"question {n}")) is not None
    async with admin_pool.connection() as conn:
        report = await sweep(conn, max_entries_per_tenant=3)
    assert report.over_bound >= 2
    survivors = [n for n in "12345" if await c.lookup(cache_key(tenant, ["eng"], f"question {n}"))]
    assert survivors == ["1", "2", "5"]  # the two used + the newest


async def test_flush_and_cli(
    query_pool: AsyncConnectionPool, admin_pool: AsyncConnectionPool, tenant: str
) -> None:
    c = PgResultCache(query_pool, CacheSettings(freshness="dependents"), index_version="v")
    await put(c, tenant, ["x", "y"])
    out = subprocess.run(
        [sys.executable, "-m", "ragline.cli", "cache", "stats", "--tenant", tenant],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.startswith("entries 2 (0 expired) in 1 scopes")
    async with admin_pool.connection() as conn:
        assert await flush(conn, tenant) == 2
    assert await n_entries(admin_pool, tenant) == 0
