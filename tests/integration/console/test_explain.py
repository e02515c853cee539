"""The why-not explainer against the real stack: one test per cause it names, each
checked against what the search itself returns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from console_world import GROUP_A, GROUP_B, World
from query_helpers import query_settings

from ragline.auth.principal import Forbidden, Principal
from ragline.config import Settings
from ragline.ops.explain import Cause, Explainer, OperatorRights
from ragline.retrieval.api_models import SearchRequest
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.lexical import LexicalSearcher
from ragline.retrieval.service import SearchBackends, SearchService
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool

pytestmark = pytest.mark.integration

ROOT = OperatorRights(subject="ops")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def parts(
    stack: Settings, world: World, console_embedder: QueryEmbedder
) -> AsyncIterator[tuple[Explainer, SearchService]]:
    admin = await open_pool(stack.admin_dsn(), name="explain-admin")
    qpool = await open_pool(stack.query_dsn(), name="explain-query")
    client = make_client(stack)
    backends = SearchBackends(
        pool=qpool,
        lexical=LexicalSearcher(client, index_prefix=stack.opensearch_index_prefix),
        embedder=console_embedder,
    )
    qs = query_settings(overfetch=10)
    try:
        yield Explainer(admin, backends, qs), SearchService(backends, qs)
    finally:
        await client.close()
        await qpool.close()
        await admin.close()


def who(world: World, *groups: str) -> Principal:
    return Principal(tenant=world.tenant, groups=groups or (GROUP_A,), subject="alice")


def req(query: str, **kw: Any) -> SearchRequest:
    return SearchRequest(query=query, **kw)


async def explain(
    parts: tuple[Explainer, SearchService], p: Principal, r: SearchRequest, **kw: Any
) -> Any:
    return await parts[0].explain(kw.pop("operator", ROOT), p, r, **kw)


async def test_in_results_at_its_rank(parts: Any, world: World) -> None:
    r = req("how many vacation days does an employee get")
    resp = await parts[1].search(who(world), r, trace_id="t")
    docs = [x.document_id for x in resp.results]
    assert "hr:leave" in docs
    ex = await explain(parts, who(world), r, document_id="hr:leave")
    assert ex.cause is Cause.IN_RESULTS
    assert ex.rank == docs.index("hr:leave") + 1
    assert ex.document["title"] == "Time off"


async def test_not_ingested(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world), req("vacation"), document_id="nope:missing")
    assert ex.cause is Cause.NOT_INGESTED


async def test_outside_tenant_only_for_an_operator_of_that_tenant(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world), req("vacation"), document_id="kb:elsewhere")
    assert ex.cause is Cause.OUTSIDE_TENANT
    assert world.other in ex.summary
    # an operator of this tenant only learns nothing about the other tenant
    narrow = OperatorRights(subject="ops", tenants=frozenset({world.tenant}))
    ex = await explain(
        parts, who(world), req("vacation"), document_id="kb:elsewhere", operator=narrow
    )
    assert ex.cause is Cause.NOT_INGESTED
    assert world.other not in str(ex.to_json())
    # and may not explain for a principal of a tenant it does not administer
    stranger = Principal(tenant=world.other, groups=(GROUP_A,), subject="bob")
    with pytest.raises(Forbidden):
        await explain(parts, stranger, req("vacation"), document_id="hr:leave", operator=narrow)


async def test_deleted(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world), req("disk cleanup memo"), document_id="tmp:deleted")
    assert ex.cause is Cause.DELETED


async def test_quarantined_with_its_reason(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world), req("private key"), document_id="up:blocked")
    assert ex.cause is Cause.QUARANTINED
    assert "secret_blocked" in ex.summary and "scanner" in ex.summary


async def test_in_flight_and_failed(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world), req("x"), document_id="up:inflight")
    assert ex.cause is Cause.IN_FLIGHT
    ex = await explain(parts, who(world), req("x"), document_id="up:failed")
    assert ex.cause is Cause.FAILED and "reset_seq" in ex.summary


async def test_outside_acl_reveals_no_content(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world, GROUP_A), req("payroll bonus"), document_id="hr:payroll-b")
    assert ex.cause is Cause.OUTSIDE_ACL
    out = str(ex.to_json())
    assert GROUP_B in out  # the ACL is what the operator needs to see
    assert "BCANARY" not in out and "Payroll secrets" not in out  # never text or title


async def test_no_readers(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world), req("vacation days"), document_id="fs:orphan")
    assert ex.cause is Cause.NO_READERS


async def test_indexed_without_chunks(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world), req("vacation"), document_id="fs:empty")
    assert ex.cause is Cause.NO_CHUNKS


async def test_superseded_version(parts: Any, world: World) -> None:
    ex = await explain(
        parts, who(world), req("travel reimbursement hotel"), document_id="pol:travel-v1"
    )
    assert ex.cause is Cause.SUPERSEDED and "pol:travel-v2" in ex.summary
    # with history it is found
    ex = await explain(
        parts,
        who(world),
        req("travel reimbursement hotel", include_history=True),
        document_id="pol:travel-v1",
    )
    assert ex.cause is Cause.IN_RESULTS
    # as of a date: the version in force then is found, the other is replaced in its series
    for as_of, cause in (("2024-06-01", Cause.SUPERSEDED), ("2023-06-01", Cause.IN_RESULTS)):
        ex = await explain(
            parts,
            who(world),
            req("travel reimbursement hotel", as_of=as_of),
            document_id="pol:travel-v1",
        )
        assert ex.cause is cause, (as_of, ex.summary)


async def test_not_in_force(parts: Any, world: World) -> None:
    ex = await explain(parts, who(world), req("remote work four days"), document_id="pol:future")
    assert ex.cause is Cause.NOT_IN_FORCE


async def test_filtered_by_the_request(parts: Any, world: World) -> None:
    r = req("disk full ingest queue", filters={"source_type": ["ticket"]})
    ex = await explain(parts, who(world), r, document_id="ops:disk")
    assert ex.cause is Cause.FILTERED and "source_type" in ex.summary


async def test_below_k_in_each_leg_with_its_ranks(parts: Any, world: World) -> None:
    r = req("vacation days expire", top_k=3)
    ex = await explain(parts, who(world), r, document_id="kb:err-4705")
    assert ex.cause is Cause.BELOW_K
    (legs,) = ex.ranks
    assert legs.dense is not None and legs.dense > 10  # overfetch of these settings
    assert legs.lexical is None or legs.lexical > 10


async def test_below_top_k_at_its_position(parts: Any, world: World) -> None:
    wide = req("disk full snapshots ingest queue", top_k=10)
    resp = await parts[1].search(who(world), wide, trace_id="t")
    first = resp.results[0].document_id
    later = next(x for x in resp.results if x.document_id != first)
    pos = [x.chunk_id for x in resp.results].index(later.chunk_id) + 1
    ex = await explain(parts, who(world), req(wide.query or "", top_k=1), chunk_id=later.chunk_id)
    assert ex.cause is Cause.BELOW_TOP_K
    assert ex.position == pos


async def test_removed_by_the_per_document_cap(parts: Any, world: World) -> None:
    q = "disk snapshots platform team quota"
    resp = await parts[1].search(who(world), req(q, max_per_document=5), trace_id="t")
    disk = [x.chunk_id for x in resp.results if x.document_id == "ops:disk"]
    assert len(disk) >= 2
    ex = await explain(parts, who(world), req(q, max_per_document=1), chunk_id=disk[-1])
    assert ex.cause is Cause.DOC_CAP
    # the document itself is still in the results
    ex = await explain(parts, who(world), req(q, max_per_document=1), document_id="ops:disk")
    assert ex.cause is Cause.IN_RESULTS


async def test_removed_by_parent_diversity(parts: Any, world: World, stack: Settings) -> None:
    q = "disk snapshots platform team quota"
    resp = await parts[1].search(who(world), req(q, max_per_document=5), trace_id="t")
    admin = await open_pool(stack.admin_dsn(), name="explain-parents")
    try:
        async with admin.connection() as conn:
            cur = await conn.execute(
                "SELECT chunk_id, parent_id FROM chunks WHERE tenant_id = %s AND document_id = %s",
                (world.tenant, "ops:disk"),
            )
            parent = dict(await cur.fetchall())
    finally:
        await admin.close()
    seen: set[str] = set()
    sibling = None
    for x in resp.results:
        if x.document_id != "ops:disk":
            continue
        if parent[x.chunk_id] in seen:
            sibling = x.chunk_id
            break
        seen.add(parent[x.chunk_id])
    assert sibling is not None
    r = req(q, max_per_document=5, expand_parents=True)
    ex = await explain(parts, who(world), r, chunk_id=sibling)
    assert ex.cause is Cause.DIVERSITY


async def test_abstained_search(parts: Any, world: World) -> None:
    r = req("zqxv blorft quinzel vrebbit", top_k=50)
    resp = await parts[1].search(who(world), r, trace_id="t")
    assert resp.abstained
    ex = await explain(parts, who(world), r, document_id="kb:ingest-troubleshooting")
    assert ex.cause is Cause.ABSTAINED
    assert ex.abstain_reason == resp.abstain_reason
