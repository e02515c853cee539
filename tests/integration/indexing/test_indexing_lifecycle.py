"""Issue 12's lifecycle defects at the indexer, on the real stack (Postgres under RLS,
OpenSearch): each test names the defect it pins. The connector's half is in
tests/integration/connector/test_connector_lifecycle.py."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from indexing_helpers import indexed, os_hits, visible_chunks

from ragline.auth.principal import Principal
from ragline.connector.state import StateStore
from ragline.errors import QuarantineError, TransientError
from ragline.events import AclChange, DocControl, DocQuarantined, DocumentMeta
from ragline.indexing.samples import acl_event, embedded_event
from ragline.ops.seq_reset import reset_seq
from ragline.retrieval.documents import get_document, get_status
from ragline.scanning.seal import as_scanned
from ragline.store.rls import scoped_transaction

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

CHUNKS = "SELECT DISTINCT document_id FROM chunks ORDER BY 1"


async def readable(query_conn, tenant: str, *groups: str) -> list[str]:
    """Documents whose chunks ``groups`` can read in Postgres (RLS)."""
    return [r[0] for r in await visible_chunks(query_conn, tenant, list(groups), CHUNKS)]


async def os_readable(stack, os_client, tenant: str, *groups: str) -> list[str]:
    hits = await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match_all": {}}, groups=list(groups)
    )
    return sorted({h["document_id"] for h in hits})


def doc(tenant: str, document_id: str, seq: int, text: str, *groups: str, **kw) -> object:
    return embedded_event(
        tenant_id=tenant,
        document_id=document_id,
        source_seq=seq,
        texts=[text],
        acl_groups=groups or ("eng",),
        **kw,
    )


def delete(tenant: str, document_id: str, seq: int, event_id: str | None = None) -> DocControl:
    extra = {"event_id": event_id} if event_id else {}
    return DocControl(
        tenant_id=tenant, document_id=document_id, source_seq=seq, action="delete", **extra
    )


async def status_row(admin, tenant: str, document_id: str) -> tuple | None:
    cur = await admin.execute(
        "SELECT status, content_hash, acl_groups FROM document_status"
        " WHERE tenant_id = %s AND document_id = %s",
        (tenant, document_id),
    )
    return await cur.fetchone()


# ------------------------------------------------------------------ defect 1
async def test_d1_reused_event_ids_across_documents_and_tenants(
    stack, apply, admin, query_conn, os_client, tenant
):
    other = f"{tenant}-b"
    # a source numbering its changes per document: both documents' first event is "1"
    a = doc(tenant, "wiki:a", 1, "alpha text", event_id="1")
    b = doc(tenant, "wiki:b", 1, "bravo text", event_id="1")
    c = doc(other, "wiki:a", 1, "other tenant text", event_id="1")
    for ev in (a, b, c):
        assert not indexed((await apply([ev]))[0]).skipped
    assert await readable(query_conn, tenant, "eng") == ["wiki:a", "wiki:b"]
    assert await readable(query_conn, other, "eng") == ["wiki:a"]
    # tenant B's delete and ACL change reuse ids tenant A used: applied, not "replayed"
    assert not indexed((await apply([delete(tenant, "wiki:b", 2, event_id="2")]))[0]).skipped
    gone = delete(other, "wiki:a", 2, event_id="2")
    assert not indexed((await apply([gone]))[0]).skipped
    assert await readable(query_conn, other, "eng") == []
    assert await os_readable(stack, os_client, other, "eng") == []
    revoke = acl_event(tenant, "wiki:a", 3, "ops").model_copy(update={"event_id": "2"})
    assert not indexed((await apply([revoke]))[0]).skipped
    assert await readable(query_conn, tenant, "eng") == []
    assert await readable(query_conn, tenant, "ops") == ["wiki:a"]
    for t, d in ((tenant, "wiki:a"), (tenant, "wiki:b"), (other, "wiki:a")):
        assert (await status_row(admin, t, d))[0] in ("indexed", "deleted")


# ------------------------------------------------------------------ defect 2
async def test_d2_quarantined_version_still_narrows_what_stays_indexed(
    stack, apply, admin, query_conn, os_client, tenant
):
    v1 = doc(tenant, "wiki:q", 1, "old version text", "eng", "sales")
    indexed((await apply([v1]))[0])
    assert await readable(query_conn, tenant, "sales") == ["wiki:q"]
    # version 2 narrows the ACL to eng (and adds support) but is quarantined
    q = as_scanned(
        DocQuarantined(
            tenant_id=tenant,
            document_id="wiki:q",
            source_seq=2,
            meta=DocumentMeta(acl_groups=("eng", "support"), classification="confidential"),
            stage="scanner",
            reason_code="secret_found",
            reason="1 secret (aws_access_key)",
        )
    )
    out = await apply([q])
    assert indexed(out[0]).acl_groups_after == ("eng",)
    # ADR 0007: the old version stays, readable by the groups both versions grant
    assert await readable(query_conn, tenant, "sales") == []
    assert await readable(query_conn, tenant, "support") == []
    assert await readable(query_conn, tenant, "eng") == ["wiki:q"]
    assert await os_readable(stack, os_client, tenant, "sales") == []
    assert await os_readable(stack, os_client, tenant, "eng") == ["wiki:q"]
    cur = await admin.execute(
        "SELECT classification FROM documents WHERE tenant_id = %s AND document_id = 'wiki:q'",
        (tenant,),
    )
    assert (await cur.fetchone())[0] == "confidential"
    assert (await status_row(admin, tenant, "wiki:q"))[0] == "quarantined"
    # the next good version takes its own ACL again
    v3 = doc(tenant, "wiki:q", 3, "third version", "eng", "support")
    indexed((await apply([v3]))[0])
    assert await readable(query_conn, tenant, "support") == ["wiki:q"]


async def test_d2_upsert_narrowing_on_the_fast_path_then_the_content(apply, query_conn, tenant):
    v1 = doc(tenant, "wiki:n", 1, "first", "eng", "sales")
    indexed((await apply([v1]))[0])
    narrowing = DocControl(
        tenant_id=tenant,
        document_id="wiki:n",
        source_seq=2,
        action="acl",
        acl=AclChange(acl_groups=("eng", "support"), narrowing=True),
    )
    out = indexed((await apply([narrowing]))[0])
    assert out.acl_groups_after == ("eng",)  # the intersection, at once
    assert await readable(query_conn, tenant, "sales") == []
    assert await readable(query_conn, tenant, "support") == []  # old text: not widened
    # the version arrives: its own ACL replaces the provisional one
    indexed((await apply([doc(tenant, "wiki:n", 2, "second", "eng", "support")]))[0])
    assert await readable(query_conn, tenant, "support") == ["wiki:n"]
    assert await readable(query_conn, tenant, "sales") == []


# ------------------------------------------------------------------ defect 3
async def test_d3_acl_change_and_delete_at_the_current_seq_apply(
    stack, apply, query_conn, os_client, tenant
):
    indexed((await apply([doc(tenant, "rev:a", 5, "revision five", "eng", "sales")]))[0])
    out = indexed((await apply([acl_event(tenant, "rev:a", 5, "eng")]))[0])
    assert not out.skipped and out.acl_groups_after == ("eng",)
    assert await readable(query_conn, tenant, "sales") == []
    assert await os_readable(stack, os_client, tenant, "sales") == []
    # a second permission change at the same revision replaces the first
    indexed((await apply([acl_event(tenant, "rev:a", 5, "ops")]))[0])
    assert await readable(query_conn, tenant, "eng") == []
    # the content at that revision (a redelivery, arriving after) keeps the ACL change
    again = doc(tenant, "rev:a", 5, "revision five", "eng", "sales")
    indexed((await apply([again.model_copy(update={"event_id": "x"})]))[0])
    assert await readable(query_conn, tenant, "ops") == ["rev:a"]
    assert not indexed((await apply([delete(tenant, "rev:a", 5)]))[0]).skipped
    assert await readable(query_conn, tenant, "ops") == []
    assert await os_readable(stack, os_client, tenant, "ops") == []
    # an upsert at the deleted revision cannot resurrect it
    assert indexed((await apply([doc(tenant, "rev:a", 5, "other", "ops")]))[0]).skipped
    assert await readable(query_conn, tenant, "ops") == []


@pytest.mark.parametrize("order", ["small-first", "big-first"])
async def test_d3_two_versions_at_one_seq_every_store_agrees(
    stack, apply, admin, os_client, tenant, order
):
    x = doc(tenant, "rev:b", 7, "version x text")
    y = doc(tenant, "rev:b", 7, "version y text")
    small, big = sorted((x, y), key=lambda e: e.content_hash)
    first, second = (small, big) if order == "small-first" else (big, small)
    # the connector records each as accepted (unless the other one wins) before the
    # indexer sees it
    store = StateStore(stack.admin_dsn())
    await store.open()
    try:
        for ev in (first, second):
            await store.record_accepted(tenant, "rev:b", 7, ev.content_hash)
            await apply([ev])
    finally:
        await store.close()
    cur = await admin.execute(
        "SELECT d.content_hash, s.content_hash, s.status FROM documents d JOIN document_status s"
        " USING (tenant_id, document_id) WHERE tenant_id = %s AND document_id = 'rev:b'",
        (tenant,),
    )
    assert await cur.fetchone() == (big.content_hash, big.content_hash, "indexed")
    hits = await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"term": {"document_id": "rev:b"}}
    )
    assert {h["text"] for h in hits} == {big.chunks[-1].text}


# ------------------------------------------------------------------ defect 4
async def test_d4_a_version_postgres_refuses_ends_quarantined_not_accepted(apply, admin, tenant):
    bad = doc(tenant, "wiki:nul", 1, "fine text")
    meta = bad.meta.model_copy(update={"title": "bad\x00title"})  # internal: not re-validated
    bad = as_scanned(bad.model_copy(update={"meta": meta}))  # as if the scanner let it by
    good = doc(tenant, "wiki:ok", 1, "good neighbour")
    res = await apply([bad, good])
    assert isinstance(res[0], QuarantineError) and res[0].reason_code == "index_rejected"
    assert "\x00" not in str(res[0]) and "bad" not in str(res[0])
    assert not indexed(res[1]).skipped  # the neighbour is indexed
    # the runtime publishes doc.quarantined for it; the indexer records it
    q = as_scanned(
        DocQuarantined(
            tenant_id=tenant,
            document_id="wiki:nul",
            source_seq=1,
            content_hash=bad.content_hash,
            meta=DocumentMeta(acl_groups=("eng",)),
            stage="indexer",
            reason_code=res[0].reason_code,
            reason=res[0].reason,
        )
    )
    await apply([q])
    assert (await status_row(admin, tenant, "wiki:nul"))[0] == "quarantined"


# ------------------------------------------------------------------ defect 5
async def test_d5_reset_seq_unpins_a_document_and_is_audited(apply, admin, query_conn, tenant):
    pinned = doc(tenant, "wiki:pin", 2**63 - 1, "bogus version")
    indexed((await apply([pinned]))[0])
    assert indexed((await apply([doc(tenant, "wiki:pin", 6, "real")]))[0]).skipped
    report = await reset_seq(
        admin, tenant_id=tenant, document_id="wiki:pin", to=5, actor="ops", reason="bad seq"
    )
    assert report.old_source_seq == 2**63 - 1 and report.ledger_entries_dropped >= 1
    assert report.seq_epoch == 1  # the document's next reset generation (lifetest F14)
    # an event accepted before the reset (generation 0: a downstream replay) is stale
    assert indexed((await apply([doc(tenant, "wiki:pin", 6, "real")]))[0]).skipped
    # the source's change accepted after it carries generation 1 and applies
    again = doc(tenant, "wiki:pin", 6, "real").model_copy(update={"seq_epoch": 1})
    assert not indexed((await apply([again]))[0]).skipped
    cur = await admin.execute(
        "SELECT old_source_seq, new_seq, actor, reason FROM seq_resets"
        " WHERE tenant_id = %s AND document_id = 'wiki:pin'",
        (tenant,),
    )
    assert await cur.fetchall() == [(2**63 - 1, 5, "ops", "bad seq")]


# ------------------------------------------------------------------ defect 6
async def test_d6_supersedes_only_within_source_or_series_and_covering_acl(
    apply, admin, query_conn, tenant
):
    policy = doc(tenant, "policy:sec", 1, "security policy", "all")
    indexed((await apply([policy]))[0])

    async def superseded(d: str) -> tuple:
        cur = await admin.execute(
            "SELECT superseded, superseded_by FROM documents"
            " WHERE tenant_id = %s AND document_id = %s",
            (tenant, d),
        )
        return await cur.fetchone()

    # a low-trust ticket from another source cannot hide the policy
    ticket = doc(tenant, "tickets:9", 1, "please ignore", "all", supersedes=["policy:sec"])
    indexed((await apply([ticket]))[0])
    assert await superseded("policy:sec") == (False, None)
    # same source but an ACL that does not cover the target's readers: no
    narrow = doc(tenant, "policy:sec-v2", 1, "v2 for admins", "admins", supersedes=["policy:sec"])
    indexed((await apply([narrow]))[0])
    assert await superseded("policy:sec") == (False, None)
    # the same document widened to cover them: yes
    indexed((await apply([acl_event(tenant, "policy:sec-v2", 2, "admins", "all")]))[0])
    assert await superseded("policy:sec") == (True, "policy:sec-v2")
    # narrowed again: released
    indexed((await apply([acl_event(tenant, "policy:sec-v2", 3, "admins")]))[0])
    assert await superseded("policy:sec") == (False, None)
    # another source in the same series, covering ACL: yes
    wiki = doc(
        tenant, "wiki:sec", 1, "policy on the wiki", "all", series_id="sec", supersedes=["x:y"]
    )
    indexed((await apply([wiki]))[0])
    p2 = doc(tenant, "policy:sec", 2, "security policy", "all", series_id="sec")
    indexed((await apply([p2]))[0])
    w2 = doc(
        tenant,
        "wiki:sec",
        2,
        "policy on the wiki",
        "all",
        series_id="sec",
        supersedes=["policy:sec"],
    )
    indexed((await apply([w2]))[0])
    assert await superseded("policy:sec") == (True, "wiki:sec")
    reader = Principal(tenant=tenant, groups=("all",), subject="t")
    async with scoped_transaction(query_conn, tenant_id=tenant, groups=["all"]):
        got = await get_document(query_conn, reader, "policy:sec")
    assert got is not None and got.superseded_by == "wiki:sec"


async def test_d6_superseded_by_is_never_an_id_the_reader_cannot_read(
    apply, admin, query_conn, tenant
):
    indexed((await apply([doc(tenant, "kb:old", 1, "old", "eng")]))[0])
    new = doc(tenant, "kb:new", 1, "new", "eng", "hr", supersedes=["kb:old"])
    indexed((await apply([new]))[0])
    # a row marked before this release (no coverage rule then): the successor is hidden
    await admin.execute(
        "UPDATE documents SET acl_groups = '{hr}' WHERE tenant_id = %s AND document_id = 'kb:new'",
        (tenant,),
    )
    reader = Principal(tenant=tenant, groups=("eng",), subject="t")
    async with scoped_transaction(query_conn, tenant_id=tenant, groups=["eng"]):
        got = await get_document(query_conn, reader, "kb:old")
    assert got is not None and got.superseded and got.superseded_by is None


# ------------------------------------------------------------------ defect 7
async def test_d7_a_deleted_document_is_gone_for_every_reader(apply, admin, query_conn, tenant):
    ev = doc(tenant, "wiki:del", 1, "to delete", "eng", title="Secret plan", version="9.9")
    indexed((await apply([ev]))[0])
    indexed((await apply([delete(tenant, "wiki:del", 2)]))[0])
    cur = await admin.execute(
        "SELECT title, uri, version, series_id, metadata FROM documents"
        " WHERE tenant_id = %s AND document_id = 'wiki:del'",
        (tenant,),
    )
    assert await cur.fetchone() == (None, None, None, None, {})
    reader = Principal(tenant=tenant, groups=("eng",), subject="t")
    async with scoped_transaction(query_conn, tenant_id=tenant, groups=["eng"]):
        assert await get_document(query_conn, reader, "wiki:del") is None


# ------------------------------------------------------------------ defect 8
async def test_d8_acl_change_for_a_never_seen_document_is_parked_and_visible(
    apply, query_conn, tenant
):
    indexed((await apply([acl_event(tenant, "wiki:later", 4, "hr")]))[0])
    hr = Principal(tenant=tenant, groups=("hr",), subject="t")
    async with scoped_transaction(query_conn, tenant_id=tenant, groups=["hr"]):
        st = await get_status(query_conn, hr, "wiki:later")
    assert st is not None and st.status == "awaiting_content" and st.never_indexed
    assert st.reason_code == "acl_before_content"
    eng = Principal(tenant=tenant, groups=("eng",), subject="t")
    async with scoped_transaction(query_conn, tenant_id=tenant, groups=["eng"]):
        assert await get_status(query_conn, eng, "wiki:later") is None
    # the content arrives (older seq, wider ACL): the parked change applies to it
    indexed((await apply([doc(tenant, "wiki:later", 3, "payroll", "eng", "hr")]))[0])
    assert await readable(query_conn, tenant, "eng") == []
    assert await readable(query_conn, tenant, "hr") == ["wiki:later"]
    async with scoped_transaction(query_conn, tenant_id=tenant, groups=["hr"]):
        st = await get_status(query_conn, hr, "wiki:later")
    assert st is not None and st.status == "indexed"


def _reset_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", "documents", "reset-seq", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )


async def test_d5_reset_seq_command(apply, admin, tenant):
    indexed((await apply([doc(tenant, "wiki:cli", 2**62, "pinned by a timestamp bug")]))[0])
    common = ("--tenant", tenant, "--document", "wiki:cli", "--to", "7")
    assert _reset_cli(*common).returncode == 2  # a reason is required (audited)
    ran = await asyncio.to_thread(_reset_cli, *common, "--reason", "INC-1", "--json")
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert (out["old_source_seq"], out["new_seq"]) == (2**62, 7)
    cur = await admin.execute(
        "SELECT d.source_seq, s.source_seq FROM documents d JOIN document_status s"
        " USING (tenant_id, document_id) WHERE tenant_id = %s AND document_id = 'wiki:cli'",
        (tenant,),
    )
    assert await cur.fetchone() == (7, 7)
    missing = ("--tenant", tenant, "--document", "wiki:none", "--to", "1", "--reason", "x")
    assert _reset_cli(*missing).returncode == 1


async def test_d4_a_schema_error_is_not_the_documents_fault(apply, admin, tenant):
    # lifetest F8: services ahead of their migration must not quarantine documents
    await admin.execute("ALTER TABLE documents RENAME COLUMN acl_rank TO acl_rank_gone")
    try:
        (res,) = await apply([doc(tenant, "wiki:schema", 1, "text")])
    finally:
        await admin.execute("ALTER TABLE documents RENAME COLUMN acl_rank_gone TO acl_rank")
    assert isinstance(res, TransientError) and not isinstance(res, QuarantineError)
    assert not indexed((await apply([doc(tenant, "wiki:schema", 1, "text")]))[0]).skipped
