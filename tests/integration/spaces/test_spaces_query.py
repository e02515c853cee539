"""The query side of embedding spaces against the real stack: the dual write keeps a
shadow space complete without a backfill, ACL changes and deletes apply to it, only an
admin can query it, the answer cache is bound to the live space, and queries in flight
during flips see no errors and no list that mixes spaces."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import jwt
import numpy as np
import pytest
from psycopg import sql
from spaces_helpers import seed_real

from ragline.auth.principal import Principal
from ragline.cache.result_cache import answer_cache_factory
from ragline.cache.settings import CacheSettings
from ragline.config import EmbeddingModelSettings, Settings
from ragline.embedding.backfill import backfill_space
from ragline.embedding.model import Embedder
from ragline.events import DocControl
from ragline.indexing.samples import acl_event
from ragline.indexing.writer import IndexWriter
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.dense import dense_query
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder
from ragline.retrieval.settings import QuerySettings
from ragline.store.space_model import recipe_text, transform
from ragline.store.spaces import count_progress, create_space, get_space, promote
from services.query.api import create_app

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

SECRET = "spaces-query-secret-0123456789abcdef0123"
ADMIN = "spaces-admin-key-not-a-real-one"
Q = "how many weeks of parental leave do employees get"


def vec(x: Any) -> np.ndarray:
    f = getattr(x, "to_numpy", None)
    return np.asarray(f() if callable(f) else x, dtype=np.float32)


def auth(tenant: str, groups: list[str]) -> dict[str, str]:
    claims = {"sub": "tester", "tenant": tenant, "groups": groups, "exp": time.time() + 600}
    return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}


def admin(space: str, key: str = ADMIN) -> dict[str, str]:
    return {"X-Ragline-Space": space, "X-Ragline-Admin-Key": key}


@asynccontextmanager
async def app_client(
    install: Settings, model: Embedder, *, cache: bool = False
) -> AsyncIterator[httpx.AsyncClient]:
    qs = QuerySettings.from_fields(
        jwt_secret=SECRET, rate_limit_per_minute=0, space_admin_key=ADMIN
    )
    inner = ModelQueryEmbedder(model)
    factory = answer_cache_factory(CacheSettings(), qs, EmbeddingModelSettings()) if cache else None
    app = create_app(install, qs, embedder=CachedEmbedder(inner, size=256), cache_factory=factory)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://q") as c:
                yield c
    finally:
        inner.close()


async def search(c: httpx.AsyncClient, headers: dict[str, str], **over: Any) -> dict[str, Any]:
    body = {"query": Q, "mode": "dense", "top_k": 5, "rerank": False, **over}
    r = await c.post("/v1/search", json=body, headers=headers)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


async def apply(pool: Any, event: Any) -> None:
    async with pool.connection() as conn:
        await IndexWriter(consumer="spaces-tests").apply(conn, event)


async def test_dual_write_acl_delete_and_admin_only_space(install, pool, model):
    async with pool.connection() as conn:
        await create_space(
            conn,
            name="t64",
            model=model.name,
            revision=model.revision,
            dim=64,
            truncate_dim=64,
            normalize=True,
            recipe="header",
            actor="test",
        )
    tenant = unique_tenant("sq")
    await seed_real(pool, model, tenant, docs=4, children=4, groups=("eng",))
    async with pool.connection() as conn:
        space = await get_space(conn, "t64")
        # dual write: every child has its vector in the shadow without any backfill,
        # equal to the truncated + renormalized event vector
        assert await count_progress(conn, space) == (16, 16)
        cur = await conn.execute(
            "SELECT c.embedding, v.embedding FROM chunks c JOIN space_vectors v"
            " USING (tenant_id, chunk_id) WHERE v.space_id = %s",
            (space.space_id,),
        )
        for full, small in await cur.fetchall():
            want = transform([vec(full)], 64)[0]
            assert np.allclose(vec(small), want, atol=1e-6)
        await conn.commit()

    # the dense query of a space prunes to its partition and its ORDER BY matches the
    # partition's HNSW index expression (forced here: on 16 rows a sort is cheaper)
    principal = Principal(tenant=tenant, groups=("eng",), subject="t")
    q = space.query_vector(np.asarray(model.encode([Q])[0], dtype=np.float32))
    query, args = dense_query(principal, q, [], limit=5, space=space)
    async with pool.connection() as conn:
        await conn.execute("SET LOCAL enable_seqscan = off")
        await conn.execute("SET LOCAL enable_sort = off")
        cur = await conn.execute(sql.SQL("EXPLAIN ") + query, args)
        plan = "\n".join(r[0] for r in await cur.fetchall())
        await conn.rollback()
    assert f"space_vectors_s{space.space_id}_hnsw" in plan, plan
    assert set(re.findall(r"space_vectors_s(\d+)", plan)) == {str(space.space_id)}  # pruned

    h = auth(tenant, ["eng"])
    async with app_client(install, model) as c:
        # ordinary callers can never select a space: no key, a wrong key, an empty key
        for bad in ({"X-Ragline-Space": "t64"}, admin("t64", "wrong"), admin("t64", "")):
            r = await c.post("/v1/search", json={"query": Q}, headers={**h, **bad})
            assert r.status_code == 403, r.text
        live = await search(c, h)
        shadow = await search(c, {**h, **admin("t64")})
        assert live["results"] and shadow["results"]
        assert "parental leave" in shadow["results"][0]["text"]
        assert shadow["results"][0]["scores"]["dense_score"] != pytest.approx(
            live["results"][0]["scores"]["dense_score"], abs=1e-4
        )
        # an unknown space, even for the admin: refused, not silently the live one
        r = await c.post("/v1/search", json={"query": Q}, headers={**h, **admin("nope")})
        assert r.status_code == 403

        # an ACL revocation on the chunk rows applies to the shadow at once
        top = shadow["results"][0]["document_id"]
        await apply(pool, acl_event(tenant, top, 2, "hr"))
        after = await search(c, {**h, **admin("t64")})
        assert top not in {x["document_id"] for x in after["results"]}
        hr = await search(c, {**auth(tenant, ["hr"]), **admin("t64")})
        assert {x["document_id"] for x in hr["results"]} == {top}

        # a delete removes the document's vectors from every space (FK cascade)
        gone = next(d for d in ("doc:0", "doc:1", "doc:2", "doc:3") if d != top)
        await apply(
            pool, DocControl(tenant_id=tenant, document_id=gone, source_seq=5, action="delete")
        )
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM space_vectors v WHERE v.tenant_id = %s AND NOT EXISTS"
                " (SELECT 1 FROM chunks c WHERE c.tenant_id = v.tenant_id"
                "  AND c.chunk_id = v.chunk_id)",
                (tenant,),
            )
            assert await cur.fetchone() == (0,)
            assert await count_progress(conn, space) == (12, 12)
            await conn.commit()
        final = await search(c, {**h, **admin("t64")}, top_k=20)
        assert gone not in {x["document_id"] for x in final["results"]}


async def _similarities(pool: Any, tenant: str, model: Any, space_id: int) -> tuple[dict, dict]:
    """Cosine similarity of Q to every child in the primary space and in ``space_id``."""
    q = np.asarray(model.encode([Q])[0], dtype=np.float32)
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT c.chunk_id, c.embedding, v.embedding FROM chunks c JOIN space_vectors v"
            " USING (tenant_id, chunk_id) WHERE v.space_id = %s AND c.tenant_id = %s",
            (space_id, tenant),
        )
        rows = await cur.fetchall()
        await conn.commit()
    prim = {cid: float(np.dot(q, vec(a))) for cid, a, _ in rows}
    other = {cid: float(np.dot(q, vec(b))) for cid, _, b in rows}
    return prim, other


def _space_of(resp: dict[str, Any], prim: dict, other: dict) -> str:
    """'primary' or 'other' when every result's dense score is that space's similarity;
    'mixed' otherwise."""
    res = resp["results"]
    fits_p = all(abs(r["scores"]["dense_score"] - prim[r["chunk_id"]]) < 2e-3 for r in res)
    fits_o = all(abs(r["scores"]["dense_score"] - other[r["chunk_id"]]) < 2e-3 for r in res)
    if fits_p and not fits_o:
        return "primary"
    if fits_o and not fits_p:
        return "other"
    return "mixed" if not (fits_p and fits_o) else "either"


async def test_flip_binds_answer_cache_and_in_flight_queries_never_mix(install, pool, model):
    tenant = unique_tenant("sf")
    await seed_real(pool, model, tenant, docs=6, children=4, groups=("eng",))
    async with pool.connection() as conn:
        space = await create_space(
            conn,
            name="plain",
            model=model.name,
            revision=model.revision,
            dim=384,
            truncate_dim=None,
            normalize=True,
            recipe="plain",
            actor="test",
        )
    stats = await backfill_space(pool, space, model, batch_size=8)
    assert stats.done == stats.total == 24
    assert recipe_text("plain", "Handbook 0", "x") == "x"
    prim, other = await _similarities(pool, tenant, model, space.space_id)
    h = auth(tenant, ["eng"])

    async with app_client(install, model, cache=True) as c:
        first = await search(c, h)
        assert first["cache"] == "miss" and _space_of(first, prim, other) == "primary"
        assert (await search(c, h))["cache"] == "hit"
        async with pool.connection() as conn:
            await promote(conn, "plain", actor="test", evidence={"test": True})
        flipped = await search(c, h)
        # never the answer cached under the old space
        assert flipped["cache"] == "miss", flipped["cache"]
        assert _space_of(flipped, prim, other) == "other"
        assert (await search(c, h))["cache"] == "hit"
        async with pool.connection() as conn:
            await promote(conn, "primary", actor="test", action="rollback", forced=True)
        back = await search(c, h)
        assert _space_of(back, prim, other) == "primary"

    # a steady query loop while the live space flips back and forth
    seen: dict[str, int] = {}
    errors = 0
    stop = asyncio.Event()
    async with app_client(install, model) as c:

        async def loop() -> None:
            nonlocal errors
            while not stop.is_set():
                r = await c.post(
                    "/v1/search",
                    json={"query": Q, "mode": "dense", "top_k": 5, "rerank": False},
                    headers=h,
                )
                if r.status_code != 200:
                    errors += 1
                    continue
                kind = _space_of(r.json(), prim, other)
                seen[kind] = seen.get(kind, 0) + 1

        tasks = [asyncio.create_task(loop()) for _ in range(3)]
        try:
            for i in range(6):
                await asyncio.sleep(0.3)
                async with pool.connection() as conn:
                    if i % 2 == 0:
                        await promote(conn, "plain", actor="test")
                    else:
                        await promote(conn, "primary", actor="test", action="rollback", forced=True)
            await asyncio.sleep(0.3)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
    assert errors == 0
    assert seen.get("mixed", 0) == 0, seen
    assert seen.get("primary", 0) > 0 and seen.get("other", 0) > 0, seen
