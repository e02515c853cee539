"""Order independence of the indexer: ACL fast path vs content, supersession in either
order, regeneration of a document, quarantine status, pending ACLs."""

from __future__ import annotations

from datetime import date

import pytest
from indexing_helpers import indexed, os_hits, pg_chunk_texts

from ragline.errors import PermanentError
from ragline.events import DocControl, DocQuarantined
from ragline.indexing.samples import acl_event as acl
from ragline.indexing.samples import embedded_event
from ragline.scanning.seal import as_scanned

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def doc_row(admin, tenant: str, doc: str) -> tuple:
    cur = await admin.execute(
        "SELECT status, generation, source_seq, acl_seq, acl_groups, superseded, superseded_by"
        " FROM documents WHERE tenant_id = %s AND document_id = %s",
        (tenant, doc),
    )
    return await cur.fetchone()


async def chunk_acls(admin, tenant: str, doc: str) -> set[tuple[str, ...]]:
    cur = await admin.execute(
        "SELECT DISTINCT acl_groups FROM chunks WHERE tenant_id = %s AND document_id = %s",
        (tenant, doc),
    )
    return {tuple(r[0]) for r in await cur.fetchall()}


async def test_acl_change_overtaking_an_older_upsert_wins(stack, apply, admin, os_client, tenant):
    v1 = embedded_event(
        tenant_id=tenant,
        document_id="wiki:p",
        source_seq=1,
        texts=["first version"],
        acl_groups=("eng", "sales"),
    )
    indexed((await apply([v1]))[0])
    # the connector saw v2 (seq 2) and then a revocation (seq 3); the revocation takes
    # the fast path and lands before v2's embedding is done
    indexed((await apply([acl(tenant, "wiki:p", 3, "eng")]))[0])
    v2 = embedded_event(
        tenant_id=tenant,
        document_id="wiki:p",
        source_seq=2,
        texts=["second version"],
        acl_groups=("eng", "sales"),
    )
    out = indexed((await apply([v2]))[0])
    assert not out.skipped and out.generation == 2
    assert out.acl_groups_after == ("eng",)
    row = await doc_row(admin, tenant, "wiki:p")
    assert row[:5] == ("indexed", 2, 2, 3, ["eng"])
    assert await chunk_acls(admin, tenant, "wiki:p") == {("eng",)}
    hits = await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": "second"}}
    )
    assert hits and {tuple(h["acl_groups"]) for h in hits} == {("eng",)}


async def test_acl_before_first_upsert_is_kept(apply, admin, tenant):
    out = indexed((await apply([acl(tenant, "wiki:new", 5, "hr")]))[0])
    assert out.skipped and out.generation == 0
    ev = embedded_event(
        tenant_id=tenant,
        document_id="wiki:new",
        source_seq=4,
        texts=["payroll calendar"],
        acl_groups=("everyone",),
    )
    indexed((await apply([ev]))[0])
    assert (await doc_row(admin, tenant, "wiki:new"))[3:5] == (5, ["hr"])
    assert await chunk_acls(admin, tenant, "wiki:new") == {("hr",)}
    cur = await admin.execute("SELECT count(*) FROM pending_acl WHERE tenant_id = %s", (tenant,))
    assert (await cur.fetchone())[0] == 0
    # a later upsert newer than the ACL takes its own ACL again
    ev2 = embedded_event(
        tenant_id=tenant,
        document_id="wiki:new",
        source_seq=6,
        texts=["payroll calendar 2"],
        acl_groups=("everyone",),
    )
    indexed((await apply([ev2]))[0])
    assert await chunk_acls(admin, tenant, "wiki:new") == {("everyone",)}


async def test_regeneration_replaces_chunks_in_both_stores(stack, apply, admin, os_client, tenant):
    v1 = embedded_event(
        tenant_id=tenant,
        document_id="fs:r.md",
        source_seq=1,
        texts=["alpha paragraph", "bravo paragraph", "charlie paragraph"],
    )
    v2 = embedded_event(
        tenant_id=tenant,
        document_id="fs:r.md",
        source_seq=2,
        texts=["alpha paragraph", "delta paragraph"],
    )
    indexed((await apply([v1]))[0])
    out = indexed((await apply([v2]))[0])
    assert out.generation == 2 and out.chunk_count == len(v2.chunks)
    texts = await pg_chunk_texts(admin, tenant, "fs:r.md")
    assert "bravo paragraph" not in texts and "delta paragraph" in texts
    cur = await admin.execute(
        "SELECT DISTINCT generation FROM chunks WHERE tenant_id = %s AND document_id = 'fs:r.md'",
        (tenant,),
    )
    assert await cur.fetchall() == [(2,)]
    src = await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"term": {"document_id": "fs:r.md"}}
    )
    assert sorted(h["text"] for h in src) == ["alpha paragraph", "delta paragraph"]
    assert {h["generation"] for h in src} == {2}


async def test_supersession_in_either_order_and_release(stack, apply, admin, os_client, tenant):
    common = {"tenant_id": tenant, "series_id": "handbook", "title": "Handbook"}
    v39 = embedded_event(
        document_id="hb:3.9",
        source_seq=1,
        version="3.9",
        texts=["parallel version three nine"],
        **common,
    )
    v42 = embedded_event(
        document_id="hb:4.2",
        source_seq=1,
        version="4.2",
        texts=["parallel version four two"],
        **common,
    )
    old = embedded_event(
        document_id="hb:4.1",
        source_seq=1,
        version="4.1",
        texts=["old version four one"],
        effective_date=date(2023, 1, 1),
        **common,
    )
    new = embedded_event(
        document_id="hb:4.3",
        source_seq=1,
        version="4.3",
        texts=["new version four three"],
        supersedes=("hb:4.1",),
        effective_date=date(2024, 1, 1),
        **common,
    )
    # successor first, predecessor later: marked on arrival
    for ev in (v39, v42, new, old):
        indexed((await apply([ev]))[0])
    assert (await doc_row(admin, tenant, "hb:4.1"))[5:] == (True, "hb:4.3")
    for d in ("hb:3.9", "hb:4.2", "hb:4.3"):
        assert (await doc_row(admin, tenant, d))[5] is False, d
    cur = await admin.execute(
        "SELECT document_id, bool_and(superseded), min(version), min(effective_date)"
        " FROM chunks WHERE tenant_id = %s GROUP BY 1 ORDER BY 1",
        (tenant,),
    )
    rows = {r[0]: r[1:] for r in await cur.fetchall()}
    assert rows["hb:4.1"] == (True, "4.1", date(2023, 1, 1))
    assert rows["hb:4.2"][0] is False
    hits = await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"term": {"superseded": True}}
    )
    assert {h["document_id"] for h in hits} == {"hb:4.1"}
    # deleting the successor makes the predecessor current again, in both stores
    delete = DocControl(tenant_id=tenant, document_id="hb:4.3", source_seq=2, action="delete")
    indexed((await apply([delete]))[0])
    assert (await doc_row(admin, tenant, "hb:4.1"))[5:] == (False, None)
    assert not await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"term": {"superseded": True}}
    )


async def test_quarantine_status_with_seq_guard(apply, admin, tenant):
    q = as_scanned(
        DocQuarantined(
            tenant_id=tenant,
            document_id="up:x",
            source_seq=4,
            stage="scanner",
            reason_code="secret_found",
            reason="2 secrets (aws_access_key)",
        )
    )
    assert (await apply([q])) == [()]
    old = q.model_copy(update={"source_seq": 3, "reason_code": "too_large", "event_id": "e-old"})
    await apply([old])
    cur = await admin.execute(
        "SELECT status, stage, reason_code, source_seq FROM document_status"
        " WHERE tenant_id = %s AND document_id = 'up:x'",
        (tenant,),
    )
    assert await cur.fetchone() == ("quarantined", "scanner", "secret_found", 4)
    # a newer clean version is indexed and supersedes the quarantine status
    ev = embedded_event(tenant_id=tenant, document_id="up:x", source_seq=5, texts=["clean"])
    indexed((await apply([ev]))[0])
    cur = await admin.execute(
        "SELECT status, reason_code FROM document_status WHERE tenant_id = %s"
        " AND document_id = 'up:x'",
        (tenant,),
    )
    assert await cur.fetchone() == ("indexed", None)


async def test_one_bad_event_does_not_fail_its_batch(apply, admin, tenant):
    good = embedded_event(tenant_id=tenant, document_id="ok:1", source_seq=1, texts=["fine"])
    bad = embedded_event(tenant_id=tenant, document_id="bad:1", source_seq=1, texts=["x"], dim=16)
    r_good, r_bad = await apply([good, bad])
    assert not indexed(r_good).skipped
    assert isinstance(r_bad, PermanentError) and "dimension" in str(r_bad)
    cur = await admin.execute(
        "SELECT document_id FROM documents WHERE tenant_id = %s ORDER BY 1", (tenant,)
    )
    assert await cur.fetchall() == [("ok:1",)]


async def test_parked_acl_survives_an_intermediate_delete(apply, admin, tenant):
    # seen by the connector in order: upsert 1, delete 3, upsert 4, acl 5 — delivered:
    # acl 5 (fast path), delete 3 (fast path), upsert 4 (after embedding)
    indexed((await apply([acl(tenant, "wiki:z", 5, "legal")]))[0])
    delete = DocControl(tenant_id=tenant, document_id="wiki:z", source_seq=3, action="delete")
    indexed((await apply([delete]))[0])
    ev = embedded_event(
        tenant_id=tenant,
        document_id="wiki:z",
        source_seq=4,
        texts=["contract template"],
        acl_groups=("everyone",),
    )
    out = indexed((await apply([ev]))[0])
    assert out.acl_groups_after == ("legal",)
    assert await chunk_acls(admin, tenant, "wiki:z") == {("legal",)}
