"""The ACL of ``document_status`` (migration 0007): every indexer write stores the newest
ACL known, ACL changes re-stamp it (also for a document that was never indexed), deletes
keep it, and the query role reads a status row through it."""

from __future__ import annotations

import pytest
from indexing_helpers import indexed, visible_chunks

from ragline.events import DocControl, DocQuarantined, DocumentMeta
from ragline.indexing.samples import acl_event as acl
from ragline.indexing.samples import embedded_event
from ragline.platform.stack.testing import unique_tenant
from ragline.scanning.seal import as_scanned
from ragline.store.migrate import load_migrations

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

VISIBLE = "SELECT document_id, status, reason_code FROM document_status ORDER BY 1"


def quarantined(tenant: str, doc: str, seq: int, *groups: str) -> DocQuarantined:
    return as_scanned(
        DocQuarantined(
            tenant_id=tenant,
            document_id=doc,
            source_seq=seq,
            meta=DocumentMeta(acl_groups=groups, title="Keys"),
            stage="scanner",
            reason_code="secret_found",
            reason="1 secret (aws_access_key)",
        )
    )


async def status_acl(admin, tenant: str, doc: str) -> tuple:
    cur = await admin.execute(
        "SELECT status, acl_groups, acl_seq FROM document_status"
        " WHERE tenant_id = %s AND document_id = %s",
        (tenant, doc),
    )
    return await cur.fetchone()


async def test_quarantined_before_indexing_is_readable_by_its_groups_only(
    apply, admin, query_conn, tenant
):
    assert (await apply([quarantined(tenant, "vault:keys", 2, "eng", "ops")])) == [()]
    assert await status_acl(admin, tenant, "vault:keys") == ("quarantined", ["eng", "ops"], 2)
    seen = [("vault:keys", "quarantined", "secret_found")]
    assert await visible_chunks(query_conn, tenant, ["ops"], VISIBLE) == seen
    assert await visible_chunks(query_conn, tenant, ["sales"], VISIBLE) == []
    assert await visible_chunks(query_conn, unique_tenant(), ["eng"], VISIBLE) == []
    # no documents row was created: the document itself stays invisible
    rows = await visible_chunks(query_conn, tenant, ["eng"], "SELECT document_id FROM documents")
    assert rows == []


async def test_acl_change_restamps_a_never_indexed_status(apply, admin, query_conn, tenant):
    await apply([quarantined(tenant, "vault:k", 2, "eng")])
    indexed((await apply([acl(tenant, "vault:k", 3, "sales")]))[0])
    assert await status_acl(admin, tenant, "vault:k") == ("quarantined", ["sales"], 3)
    assert await visible_chunks(query_conn, tenant, ["eng"], VISIBLE) == []
    assert len(await visible_chunks(query_conn, tenant, ["sales"], VISIBLE)) == 1
    # an older ACL change arriving late does not undo it
    await apply([acl(tenant, "vault:k", 1, "eng").model_copy(update={"event_id": "late"})])
    assert await status_acl(admin, tenant, "vault:k") == ("quarantined", ["sales"], 3)


async def test_quarantine_after_a_parked_acl_change_takes_the_newer_acl(apply, admin, tenant):
    # the revocation (seq 5, fast path) lands before the quarantine of version 4, whose
    # meta still names the old groups: the status must not re-open it to them
    indexed((await apply([acl(tenant, "vault:p", 5, "sec")]))[0])
    # no content yet: visible as 'awaiting_content' (issue 12, defect 8)
    assert await status_acl(admin, tenant, "vault:p") == ("awaiting_content", ["sec"], 5)
    await apply([quarantined(tenant, "vault:p", 4, "eng")])
    assert await status_acl(admin, tenant, "vault:p") == ("quarantined", ["sec"], 5)


async def test_indexed_status_follows_the_document_acl_and_delete_keeps_it(
    apply, admin, query_conn, tenant
):
    v1 = embedded_event(
        tenant_id=tenant, document_id="wiki:s", source_seq=1, texts=["x"], acl_groups=("eng",)
    )
    indexed((await apply([v1]))[0])
    assert await status_acl(admin, tenant, "wiki:s") == ("indexed", ["eng"], 1)
    indexed((await apply([acl(tenant, "wiki:s", 2, "ops")]))[0])
    assert await status_acl(admin, tenant, "wiki:s") == ("indexed", ["ops"], 2)
    gone = DocControl(tenant_id=tenant, document_id="wiki:s", source_seq=3, action="delete")
    indexed((await apply([gone]))[0])
    assert await status_acl(admin, tenant, "wiki:s") == ("deleted", ["ops"], 2)
    assert [r[1] for r in await visible_chunks(query_conn, tenant, ["ops"], VISIBLE)] == ["deleted"]
    assert await visible_chunks(query_conn, tenant, ["eng"], VISIBLE) == []


async def test_rows_without_an_acl_stay_visible_through_their_document(
    apply, admin, query_conn, tenant
):
    v1 = embedded_event(
        tenant_id=tenant, document_id="wiki:old", source_seq=1, texts=["x"], acl_groups=("eng",)
    )
    indexed((await apply([v1]))[0])
    # a row written before 0007
    await admin.execute(
        "UPDATE document_status SET acl_groups = NULL, acl_seq = NULL WHERE tenant_id = %s",
        (tenant,),
    )
    assert len(await visible_chunks(query_conn, tenant, ["eng"], VISIBLE)) == 1
    assert await visible_chunks(query_conn, tenant, ["sales"], VISIBLE) == []
    # no groups set: nothing (fails closed)
    assert await visible_chunks(query_conn, tenant, [], VISIBLE) == []


async def test_migration_0007_is_idempotent(admin):
    (m,) = [m for m in load_migrations() if m.version == 7]
    async with admin.transaction(force_rollback=True):
        await admin.execute(m.sql.encode("utf-8"))  # a second run: no error
        cur = await admin.execute(
            "SELECT count(*) FROM pg_policies WHERE tablename = 'document_status'"
            " AND 'ragline_query' = ANY(roles)"
        )
        assert await cur.fetchone() == (1,)  # 0003's tenant-only policy is gone
