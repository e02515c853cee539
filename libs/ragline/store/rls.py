"""Row-level security scope: tenant and groups set per transaction for the query role.

The policies (migrations/0003_core.sql) read ``ragline.tenant`` and ``ragline.groups``
with ``current_setting(..., true)``; ``set_config(..., true)`` makes them last only
until the end of the current transaction, so a pooled connection never carries one
principal's scope into another's request. Without a scope the query role sees nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from psycopg import AsyncConnection

from ragline.errors import PermanentError
from ragline.store.pg_errors import pg_errors

__all__ = ["GROUPS_SETTING", "TENANT_SETTING", "scoped_transaction", "set_scope"]

TENANT_SETTING = "ragline.tenant"
GROUPS_SETTING = "ragline.groups"


def _groups_value(groups: Sequence[str]) -> str:
    for g in groups:
        if not g or "," in g:
            raise PermanentError("a group name is empty or contains ','")
    return ",".join(sorted(set(groups)))


async def set_scope(conn: AsyncConnection, *, tenant_id: str, groups: Sequence[str]) -> None:
    """Set the RLS scope for the CURRENT transaction (call inside ``conn.transaction()``)."""
    if not tenant_id:
        raise PermanentError("an RLS scope needs a tenant")
    with pg_errors():
        await conn.execute(
            "SELECT set_config(%s, %s, true), set_config(%s, %s, true)",
            (TENANT_SETTING, tenant_id, GROUPS_SETTING, _groups_value(groups)),
        )


@asynccontextmanager
async def scoped_transaction(
    conn: AsyncConnection, *, tenant_id: str, groups: Sequence[str]
) -> AsyncIterator[AsyncConnection]:
    """``async with scoped_transaction(conn, tenant_id=..., groups=...) as c: ...``"""
    async with conn.transaction():
        await set_scope(conn, tenant_id=tenant_id, groups=groups)
        yield conn
