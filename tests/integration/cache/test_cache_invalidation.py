"""The invalidator's eviction on Postgres: exactly the dependent entries, the scopes an
ACL change affects, the strict policy's scopes, supersession, skipped events, replays."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cache_seed import cache_key, response, set_acl, upsert
from prometheus_client import REGISTRY
from psycopg_pool import AsyncConnectionPool

from ragline.cache.result_cache import PgResultCache
from ragline.cache.settings import CacheSettings
from ragline.cache.stage import CacheInvalidatorStage
from ragline.config import Settings
from ragline.events import DocIndexed, IndexAction
from ragline.runtime.stage import StageContext

pytestmark = pytest.mark.integration

# entry name -> (scope groups, documents its results came from)
ENTRIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "e1": (("eng",), ("kb:a",)),
    "e2": (("eng",), ("kb:b",)),
    "e3": (("hr",), ("kb:c",)),
    "e4": (("eng", "hr"), ("kb:a", "kb:c")),
    "e5": (("all",), ()),
}


async def fill(pool: AsyncConnectionPool, tenant: str) -> None:
    c = PgResultCache(pool, CacheSettings(freshness="dependents"), index_version="m@r#1")
    for name, (groups, docs) in ENTRIES.items():
        k = cache_key(tenant, groups, f"question {name}")
        assert await c.lookup(k) is None
        await c.store(k, response([(d, f"{d}#chunk") for d in docs]))


async def remaining(pool: AsyncConnectionPool, tenant: str) -> set[str]:
    by_shape = {(g, d): n for n, (g, d) in ENTRIES.items()}
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT groups, document_ids FROM answer_cache WHERE tenant_id = %s", (tenant,)
        )
        rows = await cur.fetchall()
        await conn.commit()
    return {by_shape[(tuple(g), tuple(d))] for g, d in rows}


def indexed(tenant: str, doc: str, action: str, **kw: Any) -> DocIndexed:
    return DocIndexed(
        tenant_id=tenant,
        document_id=doc,
        source_seq=5,
        action=IndexAction(action),
        generation=1,
        chunk_count=1,
        source_event_at=datetime.now(UTC) - timedelta(seconds=2),
        **kw,
    )


@pytest.fixture
async def stage(stack: Settings) -> Any:
    stages: list[CacheInvalidatorStage] = []

    async def make(freshness: str = "dependents") -> CacheInvalidatorStage:
        s = CacheInvalidatorStage(
            stack,
            CacheSettings(freshness=freshness, sweep_interval_s=3600),  # type: ignore[arg-type]
        )
        await s.start()
        stages.append(s)
        return s

    yield make
    for s in stages:
        await s.stop()


def ctx(stack: Settings) -> StageContext:
    return StageContext(settings=stack, logger=logging.getLogger("test"))


def lag_count() -> float:
    return REGISTRY.get_sample_value("ragline_cache_invalidation_lag_seconds_count") or 0.0


async def test_upsert_and_delete_evict_exactly_the_dependent_entries(
    query_pool: AsyncConnectionPool,
    admin_pool: AsyncConnectionPool,
    stack: Settings,
    stage: Any,
    tenant: str,
) -> None:
    inv = await stage("dependents")
    await fill(query_pool, tenant)
    lag0 = lag_count()
    ev = indexed(tenant, "kb:a", "upsert", acl_groups_before=("eng",), acl_groups_after=("eng",))
    assert await inv.handle(ev, ctx(stack)) == ()
    assert await remaining(admin_pool, tenant) == {"e2", "e3", "e5"}
    assert lag_count() == lag0 + 1
    assert (REGISTRY.get_sample_value("ragline_cache_invalidation_lag_seconds_sum") or 0) >= 2

    await inv.handle(ev, ctx(stack))  # a replay evicts nothing more
    assert await remaining(admin_pool, tenant) == {"e2", "e3", "e5"}
    await inv.handle(indexed(tenant, "kb:c", "delete", acl_groups_before=("hr",)), ctx(stack))
    assert await remaining(admin_pool, tenant) == {"e2", "e5"}
    skipped = indexed(tenant, "kb:b", "upsert", acl_groups_after=("eng",), skipped=True)
    await inv.handle(skipped, ctx(stack))
    assert await remaining(admin_pool, tenant) == {"e2", "e5"}


async def test_strict_upsert_evicts_every_scope_that_can_see_the_document(
    query_pool: AsyncConnectionPool,
    admin_pool: AsyncConnectionPool,
    stack: Settings,
    stage: Any,
    tenant: str,
) -> None:
    inv = await stage("strict")
    await fill(query_pool, tenant)
    await inv.handle(indexed(tenant, "kb:new", "upsert", acl_groups_after=("hr",)), ctx(stack))
    assert await remaining(admin_pool, tenant) == {"e1", "e2", "e5"}


async def test_acl_change_evicts_dependents_and_scopes_whose_visibility_changed(
    query_pool: AsyncConnectionPool,
    admin_pool: AsyncConnectionPool,
    stack: Settings,
    stage: Any,
    tenant: str,
) -> None:
    inv = await stage("dependents")
    await fill(query_pool, tenant)
    # kb:c was hr-only; now also all: entries citing it go, and scope {all} may now see it
    ev = indexed(tenant, "kb:c", "acl", acl_groups_before=("hr",), acl_groups_after=("all", "hr"))
    await inv.handle(ev, ctx(stack))
    assert await remaining(admin_pool, tenant) == {"e1", "e2"}

    other = f"{tenant}-b"
    await fill(query_pool, other)
    # revoke eng from kb:b (eng, hr -> hr): eng's entries citing it go; e1 does not cite it
    ev = indexed(other, "kb:b", "acl", acl_groups_before=("eng", "hr"), acl_groups_after=("hr",))
    await inv.handle(ev, ctx(stack))
    # scope {eng} lost visibility (e1, e2 evicted); {eng,hr} kept it and does not cite it
    assert await remaining(admin_pool, other) == {"e3", "e4", "e5"}


async def test_superseded_documents_entries_are_evicted_with_the_new_version(
    query_pool: AsyncConnectionPool,
    admin_pool: AsyncConnectionPool,
    stack: Settings,
    stage: Any,
    tenant: str,
) -> None:
    inv = await stage("dependents")
    await fill(query_pool, tenant)
    await upsert(admin_pool, tenant, "kb:a", ["policy v1"], ["eng"], 1)
    ev = await upsert(admin_pool, tenant, "kb:a2", ["policy v2"], ["eng"], 1, supersedes=["kb:a"])
    await inv.handle(ev, ctx(stack))
    assert await remaining(admin_pool, tenant) == {"e2", "e3", "e5"}


async def test_real_acl_revocation_event_from_the_indexer(
    query_pool: AsyncConnectionPool,
    admin_pool: AsyncConnectionPool,
    stack: Settings,
    stage: Any,
    tenant: str,
) -> None:
    """The doc.indexed the indexer emits for a revocation carries before/after groups."""
    inv = await stage("dependents")
    await upsert(admin_pool, tenant, "kb:c", ["confidential"], ["hr"], 1)
    await fill(query_pool, tenant)
    ev = await set_acl(admin_pool, tenant, "kb:c", ["eng"], 2)
    assert ev.acl_groups_before == ("hr",) and ev.acl_groups_after == ("eng",)
    await inv.handle(ev, ctx(stack))
    # e3/e4 cite kb:c; {eng} gained visibility (e1, e2); {all} untouched
    assert await remaining(admin_pool, tenant) == {"e5"}


async def test_a_batch_is_applied_in_one_transaction_across_tenants(
    query_pool: AsyncConnectionPool,
    admin_pool: AsyncConnectionPool,
    stack: Settings,
    stage: Any,
    tenant: str,
) -> None:
    inv = await stage("dependents")
    other = f"{tenant}-x"
    await fill(query_pool, tenant)
    await fill(query_pool, other)
    batch = [
        indexed(tenant, "kb:a", "delete", acl_groups_before=("eng",)),
        indexed(tenant, "kb:b", "upsert", acl_groups_after=("eng",), skipped=True),
        indexed(other, "kb:c", "upsert", acl_groups_after=("hr",)),
    ]
    assert await inv.handle_batch(batch, ctx(stack)) == [(), (), ()]
    assert await remaining(admin_pool, tenant) == {"e2", "e3", "e5"}
    assert await remaining(admin_pool, other) == {"e1", "e2", "e5"}
