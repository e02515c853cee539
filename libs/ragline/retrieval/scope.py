"""A Postgres connection bound to one principal's RLS scope for one transaction.

Every read of the query service goes through ``rls_transaction``: the pool hands out a
connection of the RLS-bound query role, the tenant and groups are set with
``set_config(..., true)`` (transaction-local, so a pooled connection never carries a
scope into another request), and the policies in 0003_core.sql do the filtering.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.store.pg_errors import pg_errors
from ragline.store.rls import set_scope

__all__ = ["rls_transaction"]


@asynccontextmanager
async def rls_transaction(
    pool: AsyncConnectionPool, principal: Principal, *, statement_timeout_ms: int | None = None
) -> AsyncIterator[AsyncConnection]:
    with pg_errors():
        async with pool.connection() as conn, conn.transaction():
            await set_scope(conn, tenant_id=principal.tenant, groups=principal.groups)
            if statement_timeout_ms is not None:
                await conn.execute(
                    "SELECT set_config('statement_timeout', %s, true)",
                    (str(int(statement_timeout_ms)),),
                )
            yield conn
