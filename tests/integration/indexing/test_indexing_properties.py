"""The correctness properties of issue 5, driven through the indexer stage against the
real Postgres (+pgvector) and OpenSearch-API server of the ``stack`` fixture."""

from __future__ import annotations

import uuid

import pytest
from indexing_helpers import indexed, os_hits, visible_chunks

from ragline.events import AclChange, DocControl, DocQuarantined
from ragline.indexing.checksum import os_checksum, pg_checksum
from ragline.indexing.samples import embedded_event
from ragline.scanning.seal import as_scanned
from ragline.store.os_index import index_name

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TEXTS = [
    "Expense reports are due on the fifth working day of each month.",
    "Travel must be booked through the approved agency portal.",
    "Hotel rates above the city cap need a manager's approval.",
    "Receipts are scanned and attached to the report as PDF files.",
    "Mileage is reimbursed at the published national rate.",
]


def _control(tenant: str, doc: str, seq: int, **kw: object) -> DocControl:
    return DocControl(tenant_id=tenant, document_id=doc, source_seq=seq, **kw)  # type: ignore[arg-type]


def _history(tenant: str) -> list:
    """A realistic event history: upserts, a new version, an ACL change, a delete,
    supersession and a quarantine, in topic order."""
    return [
        embedded_event(
            tenant_id=tenant,
            document_id="wiki:a",
            source_seq=1,
            texts=TEXTS[:3],
            title="Expenses",
            acl_groups=("finance", "staff"),
        ),
        embedded_event(
            tenant_id=tenant,
            document_id="wiki:b",
            source_seq=1,
            texts=TEXTS[3:],
            title="Receipts",
            acl_groups=("staff",),
        ),
        embedded_event(
            tenant_id=tenant,
            document_id="wiki:a",
            source_seq=2,
            texts=[*TEXTS[:2], "Hotel rates are capped per city."],
            title="Expenses",
            acl_groups=("finance", "staff"),
        ),
        _control(tenant, "wiki:b", 3, action="acl", acl=AclChange(acl_groups=("finance",))),
        embedded_event(
            tenant_id=tenant,
            document_id="pol:v1",
            source_seq=1,
            texts=TEXTS[1:2],
            title="Policy",
            version="1",
            series_id="pol",
        ),
        embedded_event(
            tenant_id=tenant,
            document_id="pol:v2",
            source_seq=1,
            texts=TEXTS[2:3],
            title="Policy",
            version="2",
            series_id="pol",
            supersedes=("pol:v1",),
        ),
        embedded_event(
            tenant_id=tenant, document_id="wiki:c", source_seq=5, texts=TEXTS[4:], title="Mileage"
        ),
        _control(tenant, "wiki:c", 6, action="delete"),
        as_scanned(
            DocQuarantined(
                tenant_id=tenant,
                document_id="wiki:q",
                source_seq=1,
                stage="scanner",
                reason_code="secret_found",
                reason="1 aws key",
            )
        ),
    ]


async def _checksums(stack, admin, os_client, tenant: str) -> tuple[str, str]:
    pg = await pg_checksum(admin, tenant)
    os_ = await os_checksum(os_client, index_name(stack.opensearch_index_prefix, tenant))
    return pg, os_


async def test_replay_twice_changes_nothing(stack, apply, admin, os_client, tenant) -> None:
    history = _history(tenant)
    for ev in history:  # one at a time, as partitions deliver them
        (res,) = await apply([ev])
        assert not isinstance(res, BaseException), res
    first = await _checksums(stack, admin, os_client, tenant)
    cur = await admin.execute("SELECT count(*) FROM chunks WHERE tenant_id = %s", (tenant,))
    assert (await cur.fetchone())[0] > 0
    # redelivery of the same messages (ledger hits), twice, in one batch and one by one
    await apply(history)
    for ev in history:
        await apply([ev])
    assert await _checksums(stack, admin, os_client, tenant) == first
    # upstream re-produced the same history with fresh event ids: the same changes (the
    # ledger keys on what a change is, never on the caller's id), nothing moves
    fresh = [ev.model_copy(update={"event_id": str(uuid.uuid4())}) for ev in history]
    results = await apply(fresh)
    assert not [r for r in results if isinstance(r, BaseException)]
    assert await _checksums(stack, admin, os_client, tenant) == first


async def test_older_seq_after_newer_changes_nothing(stack, apply, admin, os_client, tenant):
    new = embedded_event(
        tenant_id=tenant,
        document_id="wiki:x",
        source_seq=7,
        texts=["the new text of version seven"],
        acl_groups=("staff",),
    )
    old = embedded_event(
        tenant_id=tenant,
        document_id="wiki:x",
        source_seq=6,
        texts=["the old text of version six"],
        acl_groups=("everyone",),
    )
    assert not indexed((await apply([new]))[0]).skipped
    before = await _checksums(stack, admin, os_client, tenant)
    out = indexed((await apply([old]))[0])
    assert out.skipped and out.generation == 1
    old_delete = _control(tenant, "wiki:x", 5, action="delete")
    assert indexed((await apply([old_delete]))[0]).skipped
    old_acl = _control(tenant, "wiki:x", 6, action="acl", acl=AclChange(acl_groups=("x",)))
    # the upsert at seq 7 stamped acl_seq 7, so an ACL change at seq 6 is older too
    assert indexed((await apply([old_acl]))[0]).skipped
    assert await _checksums(stack, admin, os_client, tenant) == before


async def test_delete_canary_gone_from_both_stores(stack, apply, admin, os_client, tenant):
    canary = f"zebracanary{uuid.uuid4().hex[:10]}"
    ev = embedded_event(
        tenant_id=tenant,
        document_id="fs:canary.md",
        source_seq=1,
        texts=[f"This paragraph hides the token {canary} inside.", TEXTS[0]],
    )
    indexed((await apply([ev]))[0])
    cur = await admin.execute(
        "SELECT count(*) FROM chunks WHERE tenant_id = %s AND text LIKE %s", (tenant, f"%{canary}%")
    )
    assert (await cur.fetchone())[0] >= 1
    assert await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": canary}}
    )
    out = indexed((await apply([_control(tenant, "fs:canary.md", 2, action="delete")]))[0])
    assert out.action == "delete" and not out.skipped and out.chunk_count == 0
    cur = await admin.execute(
        "SELECT count(*) FROM chunks WHERE tenant_id = %s AND text LIKE %s", (tenant, f"%{canary}%")
    )
    assert (await cur.fetchone())[0] == 0
    assert not await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": canary}}
    )
    # the tombstone stays for audit, without content, and blocks a late older upsert
    cur = await admin.execute(
        "SELECT status, deleted_at IS NOT NULL, content_hash, source_seq FROM documents"
        " WHERE tenant_id = %s AND document_id = 'fs:canary.md'",
        (tenant,),
    )
    assert await cur.fetchone() == ("deleted", True, None, 2)
    late = ev.model_copy(update={"event_id": str(uuid.uuid4())})
    indexed((await apply([late]))[0])  # the same change again: a ledger hit, no effect
    assert not await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": canary}}
    )
    cur = await admin.execute(
        "SELECT status FROM document_status WHERE tenant_id = %s AND document_id = %s",
        (tenant, "fs:canary.md"),
    )
    assert (await cur.fetchone())[0] == "deleted"


async def test_acl_revocation_invisible_in_both_stores(
    stack, apply, admin, query_conn, os_client, tenant
):
    ev = embedded_event(
        tenant_id=tenant,
        document_id="wiki:secret",
        source_seq=1,
        texts=TEXTS,
        acl_groups=("contractors", "staff"),
    )
    indexed((await apply([ev]))[0])
    q = "SELECT chunk_id FROM chunks WHERE document_id = 'wiki:secret'"
    n = len(await visible_chunks(query_conn, tenant, ["contractors"], q))
    assert n == len(ev.chunks)
    match = {"match": {"text": "reimbursed report"}}
    assert await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, match, groups=["contractors"]
    )
    revoke = _control(
        tenant,
        "wiki:secret",
        2,
        action="acl",
        acl=AclChange(acl_groups=("staff",), classification="confidential"),
    )
    out = indexed((await apply([revoke]))[0])
    assert out.acl_groups_before == ("contractors", "staff")
    assert out.acl_groups_after == ("staff",)
    assert await visible_chunks(query_conn, tenant, ["contractors"], q) == []
    assert len(await visible_chunks(query_conn, tenant, ["staff"], q)) == n
    assert not await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, match, groups=["contractors"]
    )
    hits = await os_hits(os_client, stack.opensearch_index_prefix, tenant, match, groups=["staff"])
    assert hits and all(h["classification"] == "confidential" for h in hits)
    # no re-embedding: the vectors are untouched
    cur = await admin.execute(
        "SELECT count(*) FROM chunks WHERE tenant_id = %s AND document_id = 'wiki:secret'"
        " AND embedding_model = 'pseudo' AND acl_groups = '{staff}'",
        (tenant,),
    )
    assert (await cur.fetchone())[0] == len(TEXTS)
    # a stale re-delivery of the original upsert cannot restore the revoked group
    again = ev.model_copy(update={"event_id": str(uuid.uuid4())})
    indexed((await apply([again]))[0])
    assert await visible_chunks(query_conn, tenant, ["contractors"], q) == []


async def test_query_role_fails_closed_and_tenants_isolated(
    stack, apply, query_conn, tenant
) -> None:
    other = f"{tenant}-b"
    for t in (tenant, other):
        ev = embedded_event(
            tenant_id=t,
            document_id="wiki:shared",
            source_seq=1,
            texts=TEXTS[:2],
            acl_groups=("everyone",),
        )
        indexed((await apply([ev]))[0])
    async with query_conn.transaction():
        for table in ("chunks", "documents", "document_status"):
            cur = await query_conn.execute(f"SELECT count(*) FROM {table}")
            assert (await cur.fetchone())[0] == 0, table
    for table in ("chunks", "documents", "document_status"):
        rows = await visible_chunks(
            query_conn, tenant, ["everyone"], f"SELECT DISTINCT tenant_id FROM {table}"
        )
        assert rows == [(tenant,)], table
    # no query trick reaches the other tenant's rows
    rows = await visible_chunks(
        query_conn,
        tenant,
        ["everyone"],
        f"SELECT count(*) FROM chunks WHERE tenant_id = '{other}' OR true",
    )
    assert rows[0][0] == 3  # its own parent + 2 children only
    # the scope ended with the transaction
    async with query_conn.transaction():
        cur = await query_conn.execute("SELECT count(*) FROM chunks")
        assert (await cur.fetchone())[0] == 0
    # the query role cannot write
    with pytest.raises(Exception):
        async with query_conn.transaction():
            await query_conn.execute("DELETE FROM chunks")
