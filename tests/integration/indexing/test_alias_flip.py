"""Blue-green for the lexical index: a shadow physical index receives every write while
it is built, the flip is one ``_aliases`` call and the replaced index is kept for
rollback. Searches running all along never see a missing, empty or half-built index."""

from __future__ import annotations

import asyncio

import pytest
from indexing_helpers import indexed

from ragline.auth.principal import Principal
from ragline.indexing.repair import Repairer
from ragline.indexing.samples import embedded_event
from ragline.retrieval.lexical import LexicalSearcher
from ragline.store.os_index import (
    alias_targets,
    index_name,
    open_shadow,
    retire_rollback,
    roll_back,
    rollback_alias,
    shadow_alias,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

N = 40


def _ev(tenant: str, i: int):  # type: ignore[no-untyped-def]
    return embedded_event(
        tenant_id=tenant,
        document_id=f"flip:{i:03d}",
        source_seq=1,
        texts=[f"article {i} on the harbour crane", f"more about {i}"],
        acl_groups=("staff",),
    )


async def test_flip_under_load_never_shows_a_missing_or_partial_index(
    stack, indexer, apply, os_client, tenant
) -> None:
    for i in range(N):
        indexed((await apply([_ev(tenant, i)]))[0])
    alias = index_name(stack.opensearch_index_prefix, tenant)
    (first,) = await alias_targets(os_client, alias)
    searcher = LexicalSearcher(os_client, index_prefix=stack.opensearch_index_prefix)
    who = Principal(tenant=tenant, groups=("staff",), subject="t")
    counts: list[int] = []
    stop = asyncio.Event()

    async def search() -> None:
        while not stop.is_set():
            hits = await searcher.search(
                who, "harbour crane article", [], limit=200, timeout_s=60.0
            )
            counts.append(len(hits))

    task = asyncio.create_task(search())
    try:
        shadow = await open_shadow(os_client, alias)
        # written while the shadow is built: to the live index and to the shadow
        for i in range(N, N + 5):
            indexed((await apply([_ev(tenant, i)]))[0])
        await asyncio.sleep(0.3)
        report = await Repairer(indexer.pool, os_client, indexer.syncer).reindex(
            tenant
        )  # fill, catch up, ONE flip
        assert report.index == shadow and report.rollback == [first]
        await asyncio.sleep(0.3)
        assert await alias_targets(os_client, alias) == [shadow]
        assert await alias_targets(os_client, shadow_alias(alias)) == []
        assert await roll_back(os_client, alias) == first  # one call back
        await asyncio.sleep(0.3)
        assert await alias_targets(os_client, rollback_alias(alias)) == [shadow]
        assert await roll_back(os_client, alias) == shadow  # and forward again
        await asyncio.sleep(0.3)
    finally:
        stop.set()
        await task
    assert len(counts) > 20, "too few searches to have raced the flips"
    # only whole indexes: never fewer than the first N (a missing or half-filled index),
    # growing one write at a time to N + 5, never back (an index that missed a write)
    assert min(counts) == N and counts[-1] == N + 5, (min(counts), counts[-1])
    assert counts == sorted(counts), "a search went back to fewer hits"
    assert await retire_rollback(os_client, alias) == [first]
    assert not await os_client.indices.exists(index=first)
