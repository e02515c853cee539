"""Issue 12's lifecycle defects through the connector and the indexer together, on the
real stack (the connector's state in Postgres, the indexer's Postgres and OpenSearch):
source changes go through ``ConnectorStage.handle_batch``; its doc.control outputs go
straight to the indexer (the fast path), its doc.fetched outputs through a stand-in for
parser..embedder that keeps the envelope (``derived``) exactly as the real stages do."""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
import pytest
import pytest_asyncio

from ragline.config import Settings
from ragline.connector.intake import ImplausibleSequence
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage
from ragline.errors import PermanentError
from ragline.events import (
    DocControl,
    DocEmbedded,
    DocFetched,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
)
from ragline.indexing.samples import embedded_event
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.runtime.stage import Output, StageContext
from ragline.store.rls import scoped_transaction

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _ctx(settings: Settings) -> StageContext:
    return StageContext(settings=settings, logger=logging.getLogger("test.lifecycle"))


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def stages(stack: Settings) -> AsyncIterator[tuple[ConnectorStage, IndexerStage]]:
    connector = ConnectorStage(stack, ConnectorSettings(max_seq_jump=1000))
    # refresh "true": searchable on return without the 1 s wait (indexing/conftest.py)
    indexer = IndexerStage(stack, IndexerSettings(os_refresh="true"))
    await connector.start()
    await indexer.start()
    yield connector, indexer
    await indexer.stop()
    await connector.stop()


def _embedded(fetched: DocFetched) -> DocEmbedded:
    """What parser..embedder make of a doc.fetched: one chunk per paragraph, the envelope
    derived from the input (as every real stage does)."""
    text = base64.b64decode(fetched.content_b64).decode()
    ev = embedded_event(
        tenant_id=fetched.tenant_id,
        document_id=fetched.document_id,
        source_seq=fetched.source_seq,
        texts=[p for p in text.split("\n\n") if p.strip()] or ["(empty)"],
        acl_groups=fetched.meta.acl_groups,
        classification=fetched.meta.classification,
    )
    env = fetched.derived("embedder")
    return ev.model_copy(update={"event_id": env["event_id"], "content_hash": fetched.content_hash})


class Flow:
    def __init__(self, stack: Settings, connector: ConnectorStage, indexer: IndexerStage):
        self.stack, self.connector, self.indexer = stack, connector, indexer
        self.backlog: list[DocEmbedded] = []  # content waiting behind "embedding"

    async def intake(self, events: Sequence[Any]) -> list[Sequence[Output] | BaseException]:
        """The connector on ``events``; control outputs applied at once, content queued."""
        results = list(await self.connector.handle_batch(list(events), _ctx(self.stack)))
        control: list[DocControl] = []
        for r in results:
            if isinstance(r, BaseException):
                continue
            for out in r:
                if isinstance(out.event, DocControl):
                    control.append(out.event)
                elif isinstance(out.event, DocFetched):
                    self.backlog.append(_embedded(out.event))
        if control:
            for res in await self.indexer.handle_batch(control, _ctx(self.stack)):
                assert not isinstance(res, BaseException), res
        return results

    async def drain(self) -> None:
        """The embedding backlog reaches the indexer."""
        todo, self.backlog = self.backlog, []
        for ev in todo:
            (res,) = await self.indexer.handle_batch([ev], _ctx(self.stack))
            assert not isinstance(res, BaseException), res

    async def run(self, events: Sequence[Any]) -> list[Sequence[Output] | BaseException]:
        results = await self.intake(events)
        await self.drain()
        return results


@pytest_asyncio.fixture(loop_scope="session")
async def flow(stack: Settings, stages: tuple[ConnectorStage, IndexerStage]) -> Flow:
    return Flow(stack, *stages)


@pytest_asyncio.fixture(loop_scope="session")
async def query_conn(stack: Settings) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    conn = await psycopg.AsyncConnection.connect(stack.query_dsn())
    yield conn
    await conn.close()


async def readable(conn: Any, tenant: str, *groups: str) -> list[str]:
    async with scoped_transaction(conn, tenant_id=tenant, groups=list(groups)):
        cur = await conn.execute("SELECT DISTINCT document_id FROM chunks ORDER BY 1")
        return [r[0] for r in await cur.fetchall()]


async def statuses(stack: Settings, tenant: str) -> dict[str, tuple[str, str | None]]:
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT document_id, status, content_hash FROM document_status WHERE tenant_id = %s",
            (tenant,),
        )
        return {r[0]: (r[1], r[2]) for r in await cur.fetchall()}


def upsert(tenant: str, doc: str, seq: int, text: str, *groups: str, **kw: Any) -> SourceUpsert:
    meta = {"acl_groups": groups or ("eng",), **kw.pop("meta", {})}
    return SourceUpsert(
        tenant_id=tenant, document_id=doc, source_seq=seq, meta=meta, content_text=text, **kw
    )


# ------------------------------------------------------------------ defect 1
async def test_d1_reused_caller_ids_never_lose_a_document(flow, stack, query_conn, tenant):
    other = f"{tenant}-b"
    events = [
        upsert(tenant, "tix:1", 1, "first ticket", event_id="1"),
        upsert(tenant, "tix:2", 1, "second ticket", event_id="1"),
        upsert(other, "tix:1", 1, "other tenant ticket", event_id="1"),
    ]
    await flow.run(events)
    assert await readable(query_conn, tenant, "eng") == ["tix:1", "tix:2"]
    assert await readable(query_conn, other, "eng") == ["tix:1"]
    # tenant B reuses the ids tenant A's delete and ACL change used
    await flow.run(
        [SourceDelete(tenant_id=tenant, document_id="tix:2", source_seq=2, event_id="2")]
    )
    await flow.run(
        [
            SourceDelete(tenant_id=other, document_id="tix:1", source_seq=2, event_id="2"),
            SourceAclChange(
                tenant_id=tenant,
                document_id="tix:1",
                source_seq=2,
                acl_groups=("ops",),
                event_id="2",
            ),
        ]
    )
    assert await readable(query_conn, other, "eng") == []
    assert await readable(query_conn, tenant, "eng") == []
    assert await readable(query_conn, tenant, "ops") == ["tix:1"]
    got = {
        **await statuses(stack, tenant),
        **{f"B{k}": v for k, v in (await statuses(stack, other)).items()},
    }
    assert {k: v[0] for k, v in got.items()} == {
        "tix:1": "indexed",
        "tix:2": "deleted",
        "Btix:1": "deleted",
    }


# ------------------------------------------------------------------ defect 2
async def test_d2_narrowing_upsert_revokes_before_its_content_is_embedded(flow, query_conn, tenant):
    await flow.run([upsert(tenant, "fs:plan.md", 1, "the plan", "eng", "sales")])
    assert await readable(query_conn, tenant, "sales") == ["fs:plan.md"]
    # content and ACL change together (the fs watcher does this); the content is stuck
    # behind the embedding backlog, the revocation is not
    await flow.intake([upsert(tenant, "fs:plan.md", 2, "the new plan", "eng")])
    assert flow.backlog  # not embedded yet
    assert await readable(query_conn, tenant, "sales") == []
    assert await readable(query_conn, tenant, "eng") == ["fs:plan.md"]
    await flow.drain()
    assert await readable(query_conn, tenant, "sales") == []


# ------------------------------------------------------------------ defect 3
async def test_d3_equal_seq_control_events_apply(flow, query_conn, tenant):
    await flow.run([upsert(tenant, "svn:r", 7, "revision seven", "eng", "sales")])
    await flow.run(
        [SourceAclChange(tenant_id=tenant, document_id="svn:r", source_seq=7, acl_groups=("eng",))]
    )
    assert await readable(query_conn, tenant, "sales") == []
    await flow.run([SourceDelete(tenant_id=tenant, document_id="svn:r", source_seq=7)])
    assert await readable(query_conn, tenant, "eng") == []


async def test_d3_two_contents_at_one_seq_the_stores_agree(flow, stack, tenant):
    a = upsert(tenant, "svn:c", 3, "content A")
    b = upsert(tenant, "svn:c", 3, "content B")
    await flow.run([a])
    await flow.run([b])
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT d.content_hash, s.content_hash, s.status FROM documents d"
            " JOIN document_status s USING (tenant_id, document_id)"
            " WHERE tenant_id = %s AND document_id = 'svn:c'",
            (tenant,),
        )
        doc_hash, status_hash, status = await cur.fetchone()
    assert doc_hash == status_hash and status == "indexed"


# ------------------------------------------------------------------ defect 4
async def test_d4_a_poison_item_never_fails_its_batch_neighbours(flow, stack, tenant):
    good = [upsert(tenant, f"fs:good-{i}.md", 1, f"good document {i}") for i in range(3)]
    # an event from before the contract refused NULs (or any producer bypassing it)
    poison = SourceUpsert.model_construct(
        **{**upsert(tenant, "fs:ok.md", 1, "x").__dict__, "document_id": "fs:bad\x00id"}
    )
    results = await flow.run([good[0], poison, good[1], good[2]])
    assert isinstance(results[1], PermanentError)  # dead-lettered at once, not retried
    assert all(not isinstance(results[i], BaseException) for i in (0, 2, 3))
    got = await statuses(stack, tenant)
    assert {d: s for d, (s, _) in got.items()} == {f"fs:good-{i}.md": "indexed" for i in range(3)}


# ------------------------------------------------------------------ defect 5
async def test_d5_implausible_seq_jumps_are_refused(flow, stack, tenant):
    await flow.run([upsert(tenant, "fs:j.md", 10, "ten")])
    (res,) = await flow.run([upsert(tenant, "fs:j.md", 10 + 1001, "far")])
    assert isinstance(res, ImplausibleSequence) and "1001" in str(res)
    (res,) = await flow.run([upsert(tenant, "fs:new.md", 2**63 - 1, "pin me")])
    assert isinstance(res, ImplausibleSequence)
    (ok,) = await flow.run([upsert(tenant, "fs:j.md", 11 + 999, "near")])
    assert not isinstance(ok, BaseException)
    assert (await statuses(stack, tenant))["fs:j.md"][0] == "indexed"
    assert "fs:new.md" not in await statuses(stack, tenant)


# ------------------------------------------------------------------ defects 1/3 (F5)
async def test_redelivered_changes_never_leave_a_status_accepted(flow, stack, tenant):
    up = upsert(tenant, "fs:r.md", 1, "to be deleted")
    kept = upsert(tenant, "fs:k.md", 1, "stays")
    await flow.run([up, kept])
    gone = SourceDelete(tenant_id=tenant, document_id="fs:r.md", source_seq=2)
    never = SourceDelete(tenant_id=tenant, document_id="fs:never.md", source_seq=1)
    await flow.run([gone, never])
    # a broker redelivery of the very same events (same ids, same bodies)
    await flow.run([gone, never, kept])
    got = {d: s for d, (s, _) in (await statuses(stack, tenant)).items()}
    assert got == {"fs:r.md": "deleted", "fs:never.md": "deleted", "fs:k.md": "indexed"}
