"""Raw text retention (issue 13) on the real Postgres: claim-checked bodies carry their
owner, and purging a document removes every stored body of it and nothing else."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from ragline.config import Settings
from ragline.store.claimcheck import ClaimCheckStore, body_owner, purge_document_bodies

pytestmark = pytest.mark.integration


def _body(tenant: str, doc: str, text: str) -> bytes:
    return json.dumps({"tenant_id": tenant, "document_id": doc, "content_text": text}).encode()


async def test_purge_removes_every_body_of_the_document_only(stack: Settings, tenant: str) -> None:
    store = ClaimCheckStore(stack.admin_dsn())
    other_tenant = tenant + "-x"
    try:
        mine = [await store.put(_body(tenant, "fs:a.md", f"raw v{i} ZKQ-CANARY")) for i in range(3)]
        same_id_other_tenant = await store.put(_body(other_tenant, "fs:a.md", "other"))
        other_doc = await store.put(_body(tenant, "fs:b.md", "keep"))
        unowned = await store.put(b"\x00not json\xff")
        assert await store.purge_document(tenant, "fs:a.md") == 3
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
            cur = await conn.execute(
                "SELECT key FROM claim_checks WHERE key = ANY(%s)",
                ([*mine, same_id_other_tenant, other_doc, unowned],),
            )
            left = {r[0] for r in await cur.fetchall()}
        assert left == {same_id_other_tenant, other_doc, unowned}
    finally:
        await store.close()


async def test_a_delete_spares_bodies_stored_after_it(stack: Settings, tenant: str) -> None:
    store = ClaimCheckStore(stack.admin_dsn())
    try:
        key = await store.put(_body(tenant, "fs:c.md", "a later version"))
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
            issued = datetime.now(UTC) - timedelta(hours=1)
            assert await purge_document_bodies(conn, tenant, "fs:c.md", stored_before=issued) == 0
            assert await purge_document_bodies(conn, tenant, "fs:c.md") == 1
        with pytest.raises(Exception, match="not found"):
            await store.get(key)
    finally:
        await store.close()


def test_body_owner_is_read_from_event_json_and_never_fails() -> None:
    assert body_owner(_body("t", "fs:x", "y")) == ("t", "fs:x")
    for junk in (b"", b"[]", b"\xff\xfe", b'{"tenant_id": 5}', b"nul\x00l"):
        assert body_owner(junk) == (None, None) or body_owner(junk)[0] is None


async def test_the_indexer_applying_a_delete_purges_the_documents_bodies(
    stack: Settings, tenant: str
) -> None:
    """The one call site on the delete path (``IndexWriter._delete``): a delete removes
    every stored raw body of the document, in the delete's own transaction."""
    from ragline.events import DocControl
    from ragline.indexing.writer import IndexWriter

    store = ClaimCheckStore(stack.admin_dsn())
    try:
        keys = [await store.put(_body(tenant, "fs:gone.md", f"raw {i}")) for i in range(2)]
        kept = await store.put(_body(tenant, "fs:stays.md", "raw"))
        delete = DocControl(
            tenant_id=tenant, document_id="fs:gone.md", source_seq=5, action="delete"
        )
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as c:
            outcome = await IndexWriter(consumer=f"purge-{tenant}").apply(c, delete)
            assert outcome is not None and not outcome.skipped
            cur = await c.execute(
                "SELECT key FROM claim_checks WHERE key = ANY(%s)", ([*keys, kept],)
            )
            assert {r[0] for r in await cur.fetchall()} == {kept}
    finally:
        await store.close()
