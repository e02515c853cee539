"""The answer-cache seam: a cache sees the principal's scope in its key, a hit skips
retrieval, and hits are audited like any search."""

from __future__ import annotations

from typing import Literal

import psycopg
import pytest
from query_helpers import GROUP_A, GROUP_B, Corpus, auth, query_settings, running_app

from ragline.config import Settings
from ragline.retrieval.api_models import SearchResponse
from ragline.retrieval.cache_seam import CacheKey
from ragline.retrieval.embed import QueryEmbedder

pytestmark = pytest.mark.integration


class DictCache:
    """Exact-match cache keyed by scope + queries + request (the real one is semantic)."""

    def __init__(self) -> None:
        self.entries: dict[str, SearchResponse] = {}
        self.scopes: list[str] = []

    @property
    def state(self) -> Literal["on", "off"]:
        return "on"

    def _k(self, key: CacheKey) -> str:
        return repr((key.scope, key.queries, sorted(key.request.items())))

    async def lookup(self, key: CacheKey) -> SearchResponse | None:
        self.scopes.append(key.scope)
        return self.entries.get(self._k(key))

    async def store(self, key: CacheKey, response: SearchResponse) -> None:
        self.entries[self._k(key)] = response


async def test_cache_hit_miss_and_scope(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder
) -> None:
    cache = DictCache()
    body = {"query": "vacation days yearly", "top_k": 3}
    async with running_app(stack, query_settings(), embedder, cache_factory=lambda _: cache) as (
        _,
        c,
    ):
        first = await c.post("/v1/search", json=body, headers=auth(corpus.tenant, [GROUP_A]))
        second = await c.post("/v1/search", json=body, headers=auth(corpus.tenant, [GROUP_A]))
        other = await c.post("/v1/search", json=body, headers=auth(corpus.tenant, [GROUP_B]))
    assert first.json()["cache"] == "miss" and second.json()["cache"] == "hit"
    assert other.json()["cache"] == "miss"  # another scope never hits this entry
    assert second.json()["results"] == first.json()["results"]
    assert second.json()["trace_id"] != first.json()["trace_id"]
    assert cache.scopes == [f"{corpus.tenant}|{GROUP_A}"] * 2 + [f"{corpus.tenant}|{GROUP_B}"]
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT cache, chunk_ids FROM query_audit WHERE trace_id = %s",
            (second.json()["trace_id"],),
        )
        row = await cur.fetchone()
    assert row is not None and row[0] == "hit"
    assert row[1] == [r["chunk_id"] for r in first.json()["results"]]
