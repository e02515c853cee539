"""StateStore and the Stage's decisions against the real Postgres tables (migration 0003)."""

from __future__ import annotations

import logging

import psycopg
import pytest

from ragline.config import Settings
from ragline.connector.intake import StoredState
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage
from ragline.connector.state import StateStore
from ragline.events import DocFetched, DocumentMeta, SourceDelete, SourceUpsert
from ragline.hashing import content_hash, meta_hash
from ragline.runtime.stage import StageContext

pytestmark = pytest.mark.integration

META = DocumentMeta(acl_groups=("eng",), title="Runbook")
TEXT = "# Runbook\n\nRestart the service.\n"


async def seed_document(
    settings: Settings,
    tenant: str,
    doc: str,
    *,
    seq: int,
    text: str = TEXT,
    meta: DocumentMeta = META,
    status: str = "indexed",
) -> None:
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn(), autocommit=True) as c:
        await c.execute(
            "INSERT INTO documents (tenant_id, document_id, content_hash, meta_hash, source_seq,"
            " acl_seq, status, acl_groups) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (tenant, doc, content_hash(text.encode()), meta_hash(meta), seq, seq, status, ["eng"]),
        )
        await c.execute(
            "INSERT INTO document_status (tenant_id, document_id, source_seq, content_hash,"
            " stage, status) VALUES (%s, %s, %s, %s, 'indexer', %s)",
            (tenant, doc, seq, content_hash(text.encode()), status),
        )


async def test_get_list_and_accept_with_seq_guard(stack: Settings, tenant: str) -> None:
    store = StateStore(stack.admin_dsn())
    await store.open()
    try:
        assert await store.get(tenant, "wiki:none") is None
        await seed_document(stack, tenant, "wiki:a", seq=10)
        got = await store.get(tenant, "wiki:a")
        assert got == StoredState(
            source_seq=10,
            acl_seq=10,
            content_hash=content_hash(TEXT.encode()),
            meta_hash=meta_hash(META),
            status="indexed",
            pending_seq=10,
            pending_status="indexed",
            pending_hash=content_hash(TEXT.encode()),
            acl_groups=("eng",),
        )
        # accepted only by an event at least as new as the stored status
        assert not await store.record_accepted(tenant, "wiki:a", 9, "0" * 64)
        assert await store.record_accepted(tenant, "wiki:a", 11, "1" * 64)
        got = await store.get(tenant, "wiki:a")
        assert got is not None and (got.pending_seq, got.pending_status) == (11, "accepted")
        # a status row alone (accepted, never indexed) is known state too
        assert await store.record_accepted(tenant, "wiki:b", 5, "2" * 64)
        # source prefixes are literal: '_' is not a wildcard
        assert await store.record_accepted(tenant, "wikiXb:c", 5, "3" * 64)
        listed = await store.list_source(tenant, "wiki")
        assert sorted(listed) == ["wiki:a", "wiki:b"]
        assert listed["wiki:b"].status is None and listed["wiki:b"].pending_status == "accepted"
        assert await store.list_source(tenant, "wik") == {}
        assert await store.list_source("other-tenant", "wiki") == {}
    finally:
        await store.close()


async def test_stage_decisions_on_real_tables(stack: Settings, tenant: str) -> None:
    await seed_document(stack, tenant, "wiki:rb", seq=5)
    stage = ConnectorStage(stack, ConnectorSettings())
    await stage.start()
    ctx = StageContext(settings=stack, logger=logging.getLogger("test"))

    def up(seq: int, text: str = TEXT, meta: DocumentMeta = META) -> SourceUpsert:
        return SourceUpsert(
            tenant_id=tenant, document_id="wiki:rb", source_seq=seq, meta=meta, content_text=text
        )

    try:
        assert await stage.handle(up(6), ctx) == []  # unchanged
        assert await stage.handle(up(4, "older"), ctx) == []  # stale
        [meta_only] = await stage.handle(up(7, meta=META.model_copy(update={"title": "X"})), ctx)
        assert isinstance(meta_only.event, DocFetched) and meta_only.event.change == "metadata"
        [content] = await stage.handle(up(8, "new text"), ctx)
        assert isinstance(content.event, DocFetched) and content.event.change == "content"
        # seq 7 arrives again after 8 was accepted: stale against the status row
        assert await stage.handle(up(7, "in between"), ctx) == []
        state = await stage.state.get(tenant, "wiki:rb")
        assert state is not None and (state.pending_seq, state.pending_status) == (8, "accepted")
        # a delete is recorded like a content change, without a hash
        delete = SourceDelete(tenant_id=tenant, document_id="wiki:rb", source_seq=9)
        [control] = await stage.handle(delete, ctx)
        assert control.topic == "doc.control"
        state = await stage.state.get(tenant, "wiki:rb")
        assert state is not None
        assert (state.pending_seq, state.pending_status, state.pending_hash) == (
            9,
            "accepted",
            None,
        )
        # the indexed bytes again, while that delete is in flight: not "unchanged"
        [back] = await stage.handle(up(10), ctx)
        assert isinstance(back.event, DocFetched) and back.event.change == "content"
    finally:
        await stage.stop()


async def test_a_quarantine_at_intake_is_recorded_and_makes_older_upserts_stale(
    stack: Settings, tenant: str
) -> None:
    """lifetest F9: the connector records a version it quarantines (the fetch) in the
    batch's status write, as a content change; a later batch drops an older upsert."""
    store = StateStore(stack.admin_dsn())
    cfg = ConnectorSettings(max_document_bytes=64)
    stage = ConnectorStage(Settings(), cfg, state=store)
    await stage.start()  # opens the state store and the fetcher
    ctx = StageContext(settings=Settings(), logger=logging.getLogger("test"))
    try:

        def up(seq: int, text: str) -> SourceUpsert:
            return SourceUpsert(
                tenant_id=tenant, document_id="wiki:q", source_seq=seq, meta=META, content_text=text
            )

        [q] = await stage.handle_batch([up(2, "x" * 65)], ctx)
        assert getattr(q, "reason_code", None) == "oversize_document"
        got = await store.get(tenant, "wiki:q")
        assert got is not None
        assert (got.pending_seq, got.pending_status, got.pending_hash) == (2, "quarantined", None)
        assert got.in_flight  # nothing indexed yet: any later version is a change
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as c:
            cur = await c.execute(
                "SELECT stage, reason_code, acl_groups, acl_seq FROM document_status"
                " WHERE tenant_id = %s AND document_id = 'wiki:q'",
                (tenant,),
            )
            assert await cur.fetchone() == ("connector", "oversize_document", ["eng"], 2)
        assert await stage.handle_batch([up(1, "older, small")], ctx) == [[]]  # stale
        # an accepted older change (a delete at seq 1) cannot overwrite the quarantine's row
        assert not await store.record_accepted(tenant, "wiki:q", 1, None)
        [newer] = await stage.handle_batch([up(3, "newer, small")], ctx)
        assert isinstance(newer, list) and isinstance(newer[0].event, DocFetched)
    finally:
        await stage.stop()


async def test_the_log_of_accepted_changes_is_written_merged_and_pruned(
    stack: Settings, tenant: str
) -> None:
    """Migration 0140 (ADR 0008 amendment (3)): every change a written status row accepts
    is logged with it, merged with what the row holds, read back per generation; a
    refused write logs nothing; entries the documents row already holds are pruned (a
    narrowing does not prune an older ACL change: it still narrows it)."""
    from ragline.connector.intake import Accepted, StatedAcl

    store = StateStore(stack.admin_dsn())
    await store.open()
    key = (tenant, "wiki:log")
    try:
        await seed_document(stack, tenant, "wiki:log", seq=1)
        d2, a3 = Accepted("delete", 2, "id-d2"), Accepted("acl", 3, "id-a3")
        u4 = Accepted("content", 4, "id-u4", "h4")
        assert await store.record_accepted_each({key: (2, None)}, log={key: [d2]}) == {key: True}
        written = await store.record_acl_stated({key: (StatedAcl(3, 1, "g"), 0)}, log={key: [a3]})
        assert written == {key: True}
        assert await store.record_accepted_each({key: (4, "h4")}, log={key: [u4]}) == {key: True}
        # refused (an older change than the row's): nothing logged
        stale = Accepted("delete", 1, "id-d1")
        assert await store.record_accepted_each({key: (1, None)}, log={key: [stale]}) == {
            key: False
        }
        got = await store.get(*key)
        assert got is not None and set(got.accepted) == {d2, a3, u4}
        assert got.accepted_again("id-a3") == a3 and got.upsert_accepted_at(4)
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as c:
            # the indexer applied the delete at 2, then seq 4's quarantine narrowed (4, 0)
            await c.execute(
                "UPDATE documents SET source_seq = 2, status = 'deleted', acl_seq = 4,"
                " acl_rank = 0 WHERE tenant_id = %s AND document_id = %s",
                key,
            )
        again = await store.record_accepted_each({key: (4, "h4")}, log={key: [u4]})
        assert again == {key: True}
        got = await store.get(*key)
        assert got is not None and set(got.accepted) == {a3, u4}  # the delete is pruned
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as c:
            await c.execute(  # another generation: its entries are not this one's
                "UPDATE document_status SET seq_epoch = 1 WHERE tenant_id = %s"
                " AND document_id = %s",
                key,
            )
        got = await store.get(*key)
        assert got is not None and got.accepted == ()
    finally:
        await store.close()
