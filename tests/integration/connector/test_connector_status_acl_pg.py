"""The connector's 'accepted' status write stores the ACL the status is read through
(migration 0007): the upsert's, unless Postgres already holds a newer one; a delete keeps
the stored one."""

from __future__ import annotations

import psycopg
import pytest

from ragline.config import Settings
from ragline.connector.state import StateStore

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

H = "0" * 64


async def _acl(settings: Settings, tenant: str, doc: str) -> tuple | None:
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn(), autocommit=True) as c:
        cur = await c.execute(
            "SELECT status, source_seq, acl_groups, acl_seq FROM document_status"
            " WHERE tenant_id = %s AND document_id = %s",
            (tenant, doc),
        )
        return await cur.fetchone()


async def _sql(settings: Settings, query: str, params: tuple) -> None:
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn(), autocommit=True) as c:
        await c.execute(query, params)  # type: ignore[arg-type]


async def test_accept_stores_the_newest_acl(stack: Settings, tenant: str) -> None:
    store = StateStore(stack.admin_dsn())
    await store.open()
    try:
        # a new document: the source's ACL at the upsert's seq
        assert await store.record_accepted(tenant, "wiki:a", 2, H, (("eng",), 2))
        assert await _acl(stack, tenant, "wiki:a") == ("accepted", 2, ["eng"], 2)
        # a delete brings no ACL: the last known stays
        assert await store.record_accepted(tenant, "wiki:a", 3, None)
        assert await _acl(stack, tenant, "wiki:a") == ("accepted", 3, ["eng"], 2)
        # the empty ACL is an ACL (nobody), not "unknown"
        assert await store.record_accepted(tenant, "wiki:a", 4, H, ((), 4))
        assert await _acl(stack, tenant, "wiki:a") == ("accepted", 4, [], 4)

        # an ACL change parked by the indexer (seq 6) is newer than the upsert (seq 5)
        await _sql(
            stack,
            "INSERT INTO pending_acl (tenant_id, document_id, acl_seq, acl_groups)"
            " VALUES (%s, 'wiki:p', 6, '{sec}')",
            (tenant,),
        )
        assert await store.record_accepted(tenant, "wiki:p", 5, H, (("eng",), 5))
        assert await _acl(stack, tenant, "wiki:p") == ("accepted", 5, ["sec"], 6)

        # so is the ACL of the documents row (seq 9) for a late content upsert (seq 8)
        await _sql(
            stack,
            "INSERT INTO documents (tenant_id, document_id, source_seq, acl_seq, status,"
            " acl_groups) VALUES (%s, 'wiki:d', 7, 9, 'indexed', '{ops}')",
            (tenant,),
        )
        written = await store.record_accepted_many(
            {(tenant, "wiki:d"): (8, H), (tenant, "wiki:n"): (1, H)},
            acls={(tenant, "wiki:d"): (("eng",), 8), (tenant, "wiki:n"): (("a", "b"), 1)},
        )
        assert written == {(tenant, "wiki:d"), (tenant, "wiki:n")}
        assert await _acl(stack, tenant, "wiki:d") == ("accepted", 8, ["ops"], 9)
        assert await _acl(stack, tenant, "wiki:n") == ("accepted", 1, ["a", "b"], 1)

        # a stored status ACL newer than everything else is never replaced by an older one
        await _sql(
            stack,
            "UPDATE document_status SET acl_groups = '{late}', acl_seq = 20"
            " WHERE tenant_id = %s AND document_id = 'wiki:n'",
            (tenant,),
        )
        assert await store.record_accepted(tenant, "wiki:n", 2, H, (("eng",), 2))
        assert await _acl(stack, tenant, "wiki:n") == ("accepted", 2, ["late"], 20)
    finally:
        await store.close()
