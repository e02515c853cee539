"""OpenSearch failures after Postgres committed, crash recovery by redelivery, repair,
and the rebuild of a lost OpenSearch index from Postgres (also through the CLI)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from indexing_helpers import indexed, os_hits

from ragline.cli import main as ragline_main
from ragline.errors import TransientError
from ragline.events import AclChange, DocControl
from ragline.indexing.checksum import os_checksum
from ragline.indexing.repair import Repairer
from ragline.indexing.samples import embedded_event
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.runtime.stage import StageContext
from ragline.store.os_index import alias_targets, index_name

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def lag(admin, tenant: str) -> list[tuple[str, int, int]]:
    cur = await admin.execute(
        "SELECT document_id, revision, os_revision FROM documents WHERE tenant_id = %s"
        " AND os_revision < revision ORDER BY 1",
        (tenant,),
    )
    return await cur.fetchall()


@pytest.fixture
async def broken_indexer(stack):
    """An indexer whose OpenSearch is unreachable (a closed port). It gives up on the
    outage at once (``os_outage_wait_s=0``): these tests are about what the failure leaves
    behind and how repair fixes it, not the wait (test_opensearch_faults covers that),
    and the default 180 s wait made each of them take 3 minutes of the suite."""
    bad = stack.model_copy(update={"opensearch_url": "http://127.0.0.1:9"})
    stage = IndexerStage(bad, IndexerSettings(os_timeout_s=2, os_outage_wait_s=0))
    await stage.start()
    yield stage
    await stage.stop()


def repairer(indexer: IndexerStage) -> Repairer:
    return Repairer(indexer.pool, indexer.syncer.client, indexer.syncer)


async def test_os_failure_recorded_then_retry_and_repair_fix_it(
    stack, broken_indexer, indexer, apply, admin, os_client, tenant
):
    ctx = StageContext(settings=stack, logger=logging.getLogger("t"))
    a = embedded_event(
        tenant_id=tenant,
        document_id="wiki:a",
        source_seq=1,
        texts=["the aardvark handbook"],
        acl_groups=("eng",),
    )
    b = embedded_event(
        tenant_id=tenant,
        document_id="wiki:b",
        source_seq=1,
        texts=["the badger handbook"],
        acl_groups=("eng",),
    )
    (ra, rb) = await broken_indexer.handle_batch([a, b], ctx)
    assert isinstance(ra, TransientError) and isinstance(rb, TransientError)
    # Postgres (the truth) committed; OpenSearch lags and says so
    assert [d for d, _, _ in await lag(admin, tenant)] == ["wiki:a", "wiki:b"]
    assert not await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": "aardvark"}}
    )
    # the runtime's retry redelivers `a` to a healthy indexer: a ledger hit that syncs
    out = indexed((await apply([a]))[0])
    assert not out.skipped and out.generation == 1
    assert await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": "aardvark"}}
    )
    # `b` was dead-lettered: repair finds it by its lag
    assert [d for d, _, _ in await lag(admin, tenant)] == ["wiki:b"]
    report = await repairer(indexer).repair(tenant)
    assert report.lagging == 1 and report.synced == 1
    assert await lag(admin, tenant) == []
    assert await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": "badger"}}
    )


async def test_revocation_during_os_outage_is_repaired(
    stack, broken_indexer, indexer, apply, admin, os_client, tenant
):
    ev = embedded_event(
        tenant_id=tenant,
        document_id="wiki:r",
        source_seq=1,
        texts=["quarterly numbers"],
        acl_groups=("board", "staff"),
    )
    indexed((await apply([ev]))[0])
    revoke = DocControl(
        tenant_id=tenant,
        document_id="wiki:r",
        source_seq=2,
        action="acl",
        acl=AclChange(acl_groups=("board",)),
    )
    ctx = StageContext(settings=stack, logger=logging.getLogger("t"))
    (res,) = await broken_indexer.handle_batch([revoke], ctx)
    assert isinstance(res, TransientError)
    match = {"match": {"text": "quarterly"}}
    # OpenSearch is stale (still lists staff) until repaired; Postgres already enforces it
    assert await os_hits(os_client, stack.opensearch_index_prefix, tenant, match, groups=["staff"])
    await repairer(indexer).repair(tenant)
    assert not await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, match, groups=["staff"]
    )


async def test_reindex_rebuilds_a_lost_index_identically(
    stack, indexer, apply, admin, os_client, tenant
):
    for i in range(30):
        ev = embedded_event(
            tenant_id=tenant,
            document_id=f"kb:{i:03d}",
            source_seq=1,
            texts=[f"article {i} about topic {i % 7}", f"details of {i}"],
            acl_groups=("everyone",),
        )
        indexed((await apply([ev]))[0])
    indexed(
        (
            await apply(
                [DocControl(tenant_id=tenant, document_id="kb:007", source_seq=2, action="delete")]
            )
        )[0]
    )
    alias = index_name(stack.opensearch_index_prefix, tenant)
    before = await os_checksum(os_client, alias)
    # the in-memory server lost the index: Postgres does not know
    for concrete in await alias_targets(os_client, alias):
        await os_client.indices.delete(index=concrete)
    assert not await os_client.indices.exists(index=alias)
    report = await repairer(indexer).reindex(tenant)
    assert report.documents == 29 and report.chunks == 58
    assert await os_checksum(os_client, alias) == before
    assert await lag(admin, tenant) == []
    # the indexer keeps writing through the alias after the swap
    ev = embedded_event(
        tenant_id=tenant,
        document_id="kb:100",
        source_seq=1,
        texts=["after the rebuild"],
        acl_groups=("everyone",),
    )
    indexed((await apply([ev]))[0])
    assert await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": "rebuild"}}
    )


async def test_deep_repair_finds_silent_loss_and_orphans(
    stack, indexer, apply, admin, os_client, tenant
):
    for i in range(5):
        ev = embedded_event(
            tenant_id=tenant,
            document_id=f"d:{i}",
            source_seq=1,
            texts=[f"text number {i}"],
            acl_groups=("everyone",),
        )
        indexed((await apply([ev]))[0])
    alias = index_name(stack.opensearch_index_prefix, tenant)
    before = await os_checksum(os_client, alias)
    # a chunk vanished and an orphan appeared behind Postgres' back
    await os_client.delete_by_query(
        index=alias, body={"query": {"term": {"document_id": "d:1"}}}, refresh=True
    )
    orphan = {"document_id": "gone:1", "chunk_id": "f" * 64, "revision": 1, "text": "orphan"}
    await os_client.index(index=alias, id="f" * 64, body=orphan, refresh=True)
    plain = await repairer(indexer).repair(tenant)
    assert plain.lagging == 0  # Postgres cannot see this kind of loss
    deep = await repairer(indexer).repair(tenant, deep=True)
    assert deep.mismatched == 1 and deep.orphans == 1
    assert await os_checksum(os_client, alias) == before


async def test_cli_reindex_and_repair(stack, apply, os_client, tenant, capsys):
    ev = embedded_event(
        tenant_id=tenant,
        document_id="cli:1",
        source_seq=1,
        texts=["command line rebuild"],
        acl_groups=("everyone",),
    )
    indexed((await apply([ev]))[0])
    rc = await asyncio.to_thread(
        ragline_main, ["reindex", "opensearch", "--tenant", tenant, "--no-progress"]
    )
    assert rc == 0
    rc = await asyncio.to_thread(
        ragline_main, ["repair", "--tenant", tenant, "--deep", "--no-progress"]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert f"{tenant}: 1 documents, 1 chunks" in out
    assert "mismatched 0, orphans 0" in out
    assert await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": "rebuild"}}
    )
