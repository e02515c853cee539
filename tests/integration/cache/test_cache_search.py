"""The answer cache inside the query API (in-process app, real all-MiniLM-L6-v2 vectors,
real Postgres + OpenSearch): paraphrases hit, other questions/filters/scopes miss, a hit
returns the same evidence faster, and an index change is never served stale."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
from cache_seed import embedded

from ragline.cache.result_cache import answer_cache_factory
from ragline.cache.settings import CacheSettings
from ragline.config import EmbeddingModelSettings, Settings
from ragline.indexing.os_sync import OsSyncer
from ragline.indexing.writer import IndexWriter
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder
from ragline.retrieval.settings import QuerySettings
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool
from services.query.api import create_app

pytestmark = pytest.mark.integration

SECRET = "cache-integration-secret-0123456789abcdef"
DOCS = {
    "kb:password": (
        "Password reset: open the self-service portal, choose Forgot password and follow "
        "the link sent to your work email; the link expires after 30 minutes.",
        ("all",),
    ),
    "kb:vpn": (
        "VPN setup: install the WireGuard client, import the profile from the IT portal and "
        "connect before opening internal tools.",
        ("all",),
    ),
    "kb:gateway": (
        "Error GW-5031 means the upstream handshake timed out; raise upstream_timeout_ms or "
        "check the upstream service health.",
        ("eng",),
    ),
    "kb:salary": (
        "Salary bands for engineering levels L3 to L6 are reviewed every April.",
        ("hr",),
    ),
}


async def write(stack: Settings, tenant: str, doc: str, text: str, groups: Any, seq: int) -> None:
    # the embedder and indexer, minus Kafka: real vectors via the query model
    pool = await open_pool(stack.admin_dsn(), name="cache-search-seed", max_size=1)
    client = make_client(stack)
    try:
        ev = embedded(tenant, doc, [text], groups, seq)
        emb = EMBEDDER[0]
        vec = (await emb.embed([text]))[0]
        chunk = ev.chunks[0].model_copy(update={"embedding": tuple(float(x) for x in vec)})
        ev = ev.model_copy(update={"chunks": (chunk,)})
        async with pool.connection() as conn:
            await IndexWriter(consumer="cache-search").apply(conn, ev)
            syncer = OsSyncer(client, index_prefix=stack.opensearch_index_prefix, refresh="true")
            await syncer.sync(conn, tenant, [doc], force=True)
    finally:
        await client.close()
        await pool.close()


EMBEDDER: list[Any] = []


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def api(stack: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    inner = await ModelQueryEmbedder.load(EmbeddingModelSettings())
    EMBEDDER.append(CachedEmbedder(inner))
    tenant = unique_tenant("c")
    for doc, (text, groups) in DOCS.items():
        await write(stack, tenant, doc, text, groups, 1)
    qs = QuerySettings.from_fields(jwt_secret=SECRET, rate_limit_per_minute=0)
    # a lookup slower than the deployed 500 ms is abandoned as a miss: at load 16 (a
    # shared 2-core machine) that failed test_paraphrase_hits_and_other_keys_miss with
    # "cache lookup failed"; these tests check what hits, not how fast
    cache = CacheSettings(lookup_timeout_ms=30_000)
    factory = answer_cache_factory(cache, qs, EmbeddingModelSettings())
    app = create_app(stack, qs, embedder=EMBEDDER[0], cache_factory=factory)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://q") as client:
                yield client, tenant
    finally:
        inner.close()
        EMBEDDER.clear()


async def search(
    api: tuple[httpx.AsyncClient, str], query: str, groups: list[str], **body: Any
) -> tuple[dict[str, Any], float]:
    client, tenant = api
    claims = {"sub": "u", "tenant": tenant, "groups": groups, "exp": time.time() + 300}
    headers = {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}
    t0 = time.perf_counter()
    payload = {"query": query, "top_k": 3, **body}
    resp = await client.post("/v1/search", json=payload, headers=headers)
    elapsed = time.perf_counter() - t0
    assert resp.status_code == 200, resp.text
    return dict(resp.json()), elapsed


async def test_paraphrase_hits_and_other_keys_miss(api: tuple[httpx.AsyncClient, str]) -> None:
    first, _ = await search(api, "how do I reset my password", ["all", "eng"])
    assert first["cache"] == "miss"
    assert first["results"][0]["document_id"] == "kb:password"
    again, _ = await search(api, "How do I reset my password?", ["eng", "all"])
    para, _ = await search(api, "how can I reset my password", ["all", "eng"])
    assert again["cache"] == "hit" and para["cache"] == "hit"
    assert para["results"] == first["results"]
    assert para["trace_id"] != first["trace_id"]
    # a hit skips retrieval (no dense or lexical stage), not a timed assert: the stages
    # say it on any machine
    for hit in (again, para):
        assert "cache" in hit["timings_ms"]
        assert "dense" not in hit["timings_ms"] and "lexical" not in hit["timings_ms"]

    for query, groups, body in (
        ("how do I reset my vpn", ["all", "eng"], {}),  # another question
        ("how can I reset my password", ["all"], {}),  # another scope
        ("how can I reset my password", ["all", "eng", "hr"], {}),  # a wider scope
        ("how can I reset my password", ["all", "eng"], {"top_k": 2}),
        ("how can I reset my password", ["all", "eng"], {"filters": {"content_type": ["text"]}}),
        ("how can I reset my password", ["all", "eng"], {"mode": "lexical"}),
    ):
        got, _ = await search(api, query, groups, **body)
        assert got["cache"] == "miss", (query, groups, body)


async def test_identifier_change_misses_and_an_update_is_never_stale(
    api: tuple[httpx.AsyncClient, str], stack: Settings
) -> None:
    q = "what does error GW-5031 mean"
    first, _ = await search(api, q, ["eng"])
    assert first["cache"] == "miss" and first["results"][0]["document_id"] == "kb:gateway"
    assert (await search(api, "what is the meaning of error GW-5031", ["eng"]))[0]["cache"] == "hit"
    assert (await search(api, "what does error GW-5032 mean", ["eng"]))[0]["cache"] == "miss"

    # the document changes (no invalidator running here): the next search is fresh
    new_text = "Error GW-5031 now means the TLS certificate of the upstream expired (zebra-42)."
    _, tenant = api
    await write(stack, tenant, "kb:gateway", new_text, ("eng",), 2)
    after, _ = await search(api, q, ["eng"])
    assert after["cache"] == "miss"
    assert after["results"][0]["text"] == new_text
    assert (await search(api, q, ["eng"]))[0]["cache"] == "hit"
