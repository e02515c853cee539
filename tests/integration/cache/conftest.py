"""Cache fixtures: an admin pool (what the invalidator uses) and a query-role pool (what
the query service uses, RLS-bound) on the session's real Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from psycopg_pool import AsyncConnectionPool

from ragline.config import Settings
from ragline.store.pool import open_pool


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def admin_pool(stack: Settings) -> AsyncIterator[AsyncConnectionPool]:
    pool = await open_pool(stack.admin_dsn(), name="cache-tests-admin", max_size=4)
    yield pool
    await pool.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def query_pool(stack: Settings) -> AsyncIterator[AsyncConnectionPool]:
    pool = await open_pool(stack.query_dsn(), name="cache-tests-query", max_size=4)
    yield pool
    await pool.close()
