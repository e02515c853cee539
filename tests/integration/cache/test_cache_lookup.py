"""PgResultCache on the real Postgres as the RLS-bound query role: what hits, what
misses, what Postgres itself refuses, and the freshness check against the index."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from cache_seed import cache_key, chunk_ids, delete, near, response, set_acl, unit, upsert
from prometheus_client import REGISTRY
from psycopg_pool import AsyncConnectionPool

from ragline.cache.invalidation import apply_plan, plan_invalidation
from ragline.cache.result_cache import PgResultCache
from ragline.cache.settings import CacheSettings
from ragline.config import Settings
from ragline.store.rls import set_scope

pytestmark = pytest.mark.integration

Q = "how do I reset the vpn token"


def cache(pool: AsyncConnectionPool, **kw: Any) -> PgResultCache:
    version = kw.pop("index_version", "m@r#1")
    return PgResultCache(pool, CacheSettings(**kw), index_version=version)


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def fill(c: PgResultCache, key: Any, hits: list[tuple[str, str]]) -> None:
    assert await c.lookup(key) is None
    await c.store(key, response(hits))


async def test_hits_only_within_the_same_scope_request_version_and_meaning(
    admin_pool: AsyncConnectionPool, query_pool: AsyncConnectionPool, tenant: str
) -> None:
    await upsert(admin_pool, tenant, "kb:vpn", ["reset the vpn token in the portal"], ["eng"], 1)
    cid = chunk_ids("kb:vpn", ["reset the vpn token in the portal"])[0]
    c = cache(query_pool)
    v = unit(Q)
    await fill(c, cache_key(tenant, ["eng"], Q, v), [("kb:vpn", cid)])

    hits0 = metric("ragline_cache_hits_total", mode="hybrid")
    again = await c.lookup(cache_key(tenant, ["eng"], Q, v))
    assert again is not None and [r.chunk_id for r in again.results] == [cid]
    para = cache_key(tenant, ["eng"], "how can I reset my VPN token?", near(v, 0.95))
    assert await c.lookup(para) is not None
    assert metric("ragline_cache_hits_total", mode="hybrid") == hits0 + 2

    misses = [
        cache_key(tenant, ["eng"], "unrelated question", near(v, 0.85)),  # below threshold
        cache_key(tenant, ["eng"], "how do I revoke the vpn token", near(v, 0.99)),  # guard
        cache_key(tenant, ["eng", "hr"], Q, v),  # a wider scope
        cache_key(tenant, ["hr"], Q, v),  # another scope
        cache_key("other-tenant", ["eng"], Q, v),
        cache_key(tenant, ["eng"], Q, v, filters={"versions": ["4.2"]}),
        cache_key(tenant, ["eng"], Q, v, top_k=20),
        cache_key(tenant, ["eng"], Q, v, mode="dense"),
    ]
    for k in misses:
        assert await c.lookup(k) is None, k
    other_model = cache(query_pool, index_version="m@r#2")
    assert await other_model.lookup(cache_key(tenant, ["eng"], Q, v)) is None


async def test_lexical_mode_hits_only_on_the_same_normalized_text(
    admin_pool: AsyncConnectionPool, query_pool: AsyncConnectionPool, tenant: str
) -> None:
    await upsert(admin_pool, tenant, "kb:lex", ["gateway error codes"], ["eng"], 1)
    cid = chunk_ids("kb:lex", ["gateway error codes"])[0]
    c = cache(query_pool)
    await fill(c, cache_key(tenant, ["eng"], "GW-5031 meaning", mode="lexical"), [("kb:lex", cid)])
    hit = await c.lookup(cache_key(tenant, ["eng"], "  gw-5031   MEANING? ", mode="lexical"))
    assert hit is not None
    assert await c.lookup(cache_key(tenant, ["eng"], "meaning of GW-5031", mode="lexical")) is None


async def test_postgres_refuses_other_scopes_and_deletes(
    admin_pool: AsyncConnectionPool,
    query_pool: AsyncConnectionPool,
    stack: Settings,
    tenant: str,
) -> None:
    await upsert(admin_pool, tenant, "kb:rls", ["scoped text"], ["eng", "hr"], 1)
    cid = chunk_ids("kb:rls", ["scoped text"])[0]
    c = cache(query_pool)
    await fill(c, cache_key(tenant, ["eng"], "q one"), [("kb:rls", cid)])
    await fill(c, cache_key(tenant, ["hr"], "q two"), [("kb:rls", cid)])

    async with await psycopg.AsyncConnection.connect(stack.query_dsn()) as conn:

        async def visible(groups: list[str] | None) -> int:
            async with conn.transaction():
                if groups is not None:
                    await set_scope(conn, tenant_id=tenant, groups=groups)
                cur = await conn.execute("SELECT count(*) FROM answer_cache")
                row = await cur.fetchone()
                return int(row[0]) if row else -1

        assert await visible(None) == 0  # no scope: fails closed
        assert await visible(["eng"]) == 1
        assert await visible(["hr"]) == 1
        assert await visible(["eng", "hr"]) == 0  # exact scope only, not a superset
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            async with conn.transaction():
                await set_scope(conn, tenant_id=tenant, groups=["eng"])
                await conn.execute("DELETE FROM answer_cache")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # RLS WITH CHECK
            async with conn.transaction():
                await set_scope(conn, tenant_id=tenant, groups=["eng"])
                await conn.execute(
                    "INSERT INTO answer_cache (tenant_id, groups, scope_hash, request_hash,"
                    " index_version, guard_hash, query_hash, mode, response, size_bytes,"
                    " built_at, expires_at) VALUES (%s, '{hr}', 's', 'r', 'v', 'g', 'q',"
                    " 'hybrid', '\\x00', 1, now(), now())",
                    (tenant,),
                )


async def test_deleted_updated_or_revoked_evidence_is_never_served(
    admin_pool: AsyncConnectionPool, query_pool: AsyncConnectionPool, tenant: str
) -> None:
    """No invalidator runs here: the lookup's own check against the index refuses entries
    whose cited chunks are gone or no longer visible to the scope."""
    c = cache(query_pool, freshness="dependents")
    texts = {d: [f"text of {d}"] for d in ("kb:del", "kb:upd", "kb:acl")}
    for d, t in texts.items():
        await upsert(admin_pool, tenant, d, t, ["eng", "hr"], 1)
    keys = {d: cache_key(tenant, ["hr"], f"question about {d}") for d in texts}
    for d, k in keys.items():
        await fill(c, k, [(d, chunk_ids(d, texts[d])[0])])
        assert await c.lookup(k) is not None

    stale0 = metric("ragline_cache_misses_total", mode="hybrid", reason="stale")
    await delete(admin_pool, tenant, "kb:del", 2)
    await upsert(admin_pool, tenant, "kb:upd", ["brand new text"], ["eng", "hr"], 2)
    await set_acl(admin_pool, tenant, "kb:acl", ["eng"], 2)  # revoke hr
    for k in keys.values():
        assert await c.lookup(k) is None
    assert metric("ragline_cache_misses_total", mode="hybrid", reason="stale") == stale0 + 3
    # eng still sees kb:acl: an eng entry citing it stays valid
    k_eng = cache_key(tenant, ["eng"], "question about kb:acl")
    await fill(c, k_eng, [("kb:acl", chunk_ids("kb:acl", texts["kb:acl"])[0])])
    assert await c.lookup(k_eng) is not None


async def test_strict_freshness_refuses_entries_older_than_a_visible_change(
    admin_pool: AsyncConnectionPool, query_pool: AsyncConnectionPool, tenant: str
) -> None:
    await upsert(admin_pool, tenant, "kb:old", ["old text"], ["eng"], 1)
    cid = chunk_ids("kb:old", ["old text"])[0]
    strict, lax = cache(query_pool), cache(query_pool, freshness="dependents")
    k_strict = cache_key(tenant, ["eng"], "q strict")
    k_lax = cache_key(tenant, ["eng"], "q lax")
    k_hr = cache_key(tenant, ["hr"], "q hr")
    await fill(strict, k_strict, [("kb:old", cid)])
    await fill(lax, k_lax, [("kb:old", cid)])
    await fill(strict, k_hr, [])  # an abstained answer for hr
    # a NEW document eng can see may answer eng's questions now
    await upsert(admin_pool, tenant, "kb:new", ["new text"], ["eng"], 1)
    assert await strict.lookup(k_strict) is None
    assert await lax.lookup(k_lax) is not None  # documented trade-off of "dependents"
    assert await strict.lookup(k_hr) is not None  # hr cannot see kb:new: unaffected


async def test_a_store_overtaken_by_an_invalidation_is_refused(
    admin_pool: AsyncConnectionPool, query_pool: AsyncConnectionPool, tenant: str
) -> None:
    ev = await upsert(admin_pool, tenant, "kb:f", ["fenced text"], ["eng"], 1)
    cid = chunk_ids("kb:f", ["fenced text"])[0]
    c = cache(query_pool, freshness="dependents")
    k = cache_key(tenant, ["eng"], "fence me")
    fenced0 = metric("ragline_cache_stores_total", outcome="fenced")
    assert await c.lookup(k) is None  # the search begins ...
    plan = plan_invalidation(ev, freshness="dependents")  # ... the index changes ...
    assert plan is not None
    async with admin_pool.connection() as conn:
        await apply_plan(conn, plan)
    await c.store(k, response([("kb:f", cid)]))  # ... and its result arrives late
    assert metric("ragline_cache_stores_total", outcome="fenced") == fenced0 + 1
    assert await c.lookup(k) is None
    await c.store(k, response([("kb:f", cid)]))  # began after the change: cached
    assert await c.lookup(k) is not None

    # an invalidation for another group does not fence this scope
    other = await upsert(admin_pool, tenant, "kb:hr", ["hr text"], ["hr"], 1)
    k2 = cache_key(tenant, ["eng"], "not fenced")
    assert await c.lookup(k2) is None
    plan2 = plan_invalidation(other, freshness="dependents")
    assert plan2 is not None
    async with admin_pool.connection() as conn:
        await apply_plan(conn, plan2)
    await c.store(k2, response([("kb:f", cid)]))
    assert await c.lookup(k2) is not None


async def test_hits_are_counted_and_unusable_stores_skipped(
    admin_pool: AsyncConnectionPool, query_pool: AsyncConnectionPool, tenant: str
) -> None:
    await upsert(admin_pool, tenant, "kb:h", ["hit text"], ["eng"], 1)
    cid = chunk_ids("kb:h", ["hit text"])[0]
    c = cache(query_pool)
    k = cache_key(tenant, ["eng"], "count me")
    await fill(c, k, [("kb:h", cid)])
    for _ in range(3):
        assert await c.lookup(k) is not None
    async with admin_pool.connection() as conn:
        cur = await conn.execute(
            "SELECT hits, last_hit_at IS NOT NULL, document_ids FROM answer_cache"
            " WHERE tenant_id = %s",
            (tenant,),
        )
        assert await cur.fetchall() == [(3, True, ["kb:h"])]
        await conn.commit()

    no_lookup = cache_key(tenant, ["eng"], "never looked up")
    await c.store(no_lookup, response([("kb:h", cid)]))
    degraded_key = cache_key(tenant, ["eng"], "degraded one")
    assert await c.lookup(degraded_key) is None
    degraded = response([("kb:h", cid)]).model_copy(update={"degraded": ["lexical_down"]})
    await c.store(degraded_key, degraded)
    assert await c.lookup(no_lookup) is None
    assert await c.lookup(degraded_key) is None
