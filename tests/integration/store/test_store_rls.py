"""The schema's access rules, checked in the catalog and by acting as each role: RLS is
ENABLED and FORCED on every table the query role can read, the query role owns nothing
and cannot write, and a pipeline login that is only a member of ragline_pipeline (not
the owner, no BYPASSRLS) can read and write every row."""

from __future__ import annotations

import uuid

import psycopg
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def test_every_table_the_query_role_reads_is_forced_rls(stack) -> None:
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')"
            " AND has_table_privilege('ragline_query', c.oid, 'SELECT')"
        )
        rows = await cur.fetchall()
    names = {r[0] for r in rows}
    assert {"documents", "chunks", "document_status"} <= names
    assert [r for r in rows if not (r[1] and r[2])] == []
    for private in ("embedding_cache", "processed_events", "pending_acl"):
        assert private not in names


async def test_pipeline_member_reads_and_writes_all_rows_query_role_cannot(stack) -> None:
    role = f"pipe_{uuid.uuid4().hex[:8]}"
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as conn:
        await conn.execute(f"CREATE ROLE {role} NOLOGIN NOBYPASSRLS IN ROLE ragline_pipeline")
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL ROLE {role}")
                await conn.execute(
                    "INSERT INTO documents (tenant_id, document_id, status, acl_groups)"
                    " VALUES (%s, 'x:1', 'indexed', '{g}')",
                    (tenant,),
                )
                cur = await conn.execute(
                    "SELECT count(*) FROM documents WHERE tenant_id = %s", (tenant,)
                )
                assert (await cur.fetchone())[0] == 1  # no ragline.* settings needed
                await conn.execute("DELETE FROM documents WHERE tenant_id = %s", (tenant,))
            async with conn.transaction():
                await conn.execute("SET LOCAL ROLE ragline_query")
                await conn.execute(
                    "SELECT set_config('ragline.tenant', %s, true),"
                    " set_config('ragline.groups', 'g', true)",
                    (tenant,),
                )
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    await conn.execute(
                        "INSERT INTO documents (tenant_id, document_id, status)"
                        " VALUES (%s, 'x:2', 'indexed')",
                        (tenant,),
                    )
        finally:
            await conn.execute(f"DROP ROLE {role}")
