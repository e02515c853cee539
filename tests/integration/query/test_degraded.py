"""Degradation instead of failure: OpenSearch down -> dense-only results flagged
``lexical_unavailable`` (dead nodes in a URL list: no degradation while one answers);
a reranker that fails or times out -> fusion order, flagged; rerank with a real (tiny,
random) CrossEncoder loaded from a local directory."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from query_helpers import GROUP_A, Corpus, auth, query_settings, running_app

from ragline.config import Settings
from ragline.platform.stack.testing import free_port
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.rerank import CrossEncoderReranker

pytestmark = pytest.mark.integration

BODY = {"query": "How much annual leave do staff receive?", "top_k": 5}


async def test_opensearch_down_degrades_to_dense(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder
) -> None:
    dead = stack.model_copy(update={"opensearch_url": f"http://127.0.0.1:{free_port()}"})
    qs = query_settings(backend_timeout_s=2.0)
    async with running_app(dead, qs, embedder) as (_, client):
        h = auth(corpus.tenant, [GROUP_A])
        r = await client.post("/v1/search", json=BODY, headers=h)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["degraded"] == ["lexical_unavailable"]
        assert body["results"] and body["results"][0]["document_id"] == "hr:leave"
        assert all(x["scores"]["bm25_rank"] is None for x in body["results"])
        r = await client.post("/v1/search", json={**BODY, "mode": "lexical"}, headers=h)
        assert r.status_code == 503
        assert r.json()["status"] == 503 and "Traceback" not in r.text
        ready = await client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "degraded"
        assert ready.json()["checks"]["opensearch"] == "down"


async def test_dead_nodes_in_the_url_list_are_skipped(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder
) -> None:
    """Two of three listed nodes refuse (killed): every search still gets its lexical leg
    (the client moves a refused request to the next node and keeps the dead ones out)."""
    dead = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    listed = stack.model_copy(update={"opensearch_url": ",".join([*dead, stack.opensearch_url])})
    async with running_app(listed, query_settings(backend_timeout_s=5.0), embedder) as (_, c):
        h = auth(corpus.tenant, [GROUP_A])
        for _ in range(4):  # round-robin: within three requests every node is picked
            words = {**BODY, "query": "vacation days"}  # words the index holds
            body = (await c.post("/v1/search", json=words, headers=h)).json()
            assert body["degraded"] == [], body["degraded"]
            assert any(x["scores"]["bm25_rank"] is not None for x in body["results"])


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random BERT with one output: real CrossEncoder plumbing, no download."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from ragline.embedding.model import default_model_path

    out = tmp_path_factory.mktemp("tiny-ce")
    tok = AutoTokenizer.from_pretrained(default_model_path())
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    BertForSequenceClassification(cfg).save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def tiny_reranker(tiny_cross_encoder: Path) -> CrossEncoderReranker:
    rr = CrossEncoderReranker(tiny_cross_encoder, threads=1)  # as the service (torch_threads)
    await rr.aload()
    return rr


@pytest.mark.torch  # CrossEncoder: the torch extra
async def test_rerank_with_local_cross_encoder(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder, tiny_reranker: CrossEncoderReranker
) -> None:
    async with running_app(stack, query_settings(), embedder, reranker=tiny_reranker) as (_, c):
        h = auth(corpus.tenant, [GROUP_A])
        r = await c.post("/v1/search", json={**BODY, "rerank": True}, headers=h)
        body = r.json()
        assert r.status_code == 200 and body["degraded"] == []
        scores = [x["scores"]["rerank"] for x in body["results"]]
        assert all(isinstance(s, float) for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert "rerank" in body["timings_ms"]


@pytest.mark.torch
async def test_rerank_timeout_and_missing_model_fall_back(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder, tiny_reranker: CrossEncoderReranker
) -> None:
    h = auth(corpus.tenant, [GROUP_A])
    qs = query_settings(rerank_timeout_s=1e-6)
    async with running_app(stack, qs, embedder, reranker=tiny_reranker) as (_, c):
        plain = (await c.post("/v1/search", json=BODY, headers=h)).json()
        r = await c.post("/v1/search", json={**BODY, "rerank": True}, headers=h)
        body = r.json()
        assert r.status_code == 200 and body["degraded"] == ["rerank_timeout"]
        assert [x["chunk_id"] for x in body["results"]] == [x["chunk_id"] for x in plain["results"]]
        assert all(x["scores"]["rerank"] is None for x in body["results"])
    async with running_app(stack, query_settings(), embedder) as (_, c):
        body = (await c.post("/v1/search", json={**BODY, "rerank": True}, headers=h)).json()
        assert body["degraded"] == ["rerank_unavailable"] and body["results"]


async def test_rate_limit_gives_429(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder
) -> None:
    qs = query_settings(rate_limit_per_minute=1, rate_limit_burst=2)
    async with running_app(stack, qs, embedder) as (_, c):
        h = auth(corpus.tenant, [GROUP_A], sub="greedy")
        codes = [(await c.get("/v1/documents/hr:leave", headers=h)).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        r = await c.get("/v1/documents/hr:leave", headers=h)
        assert int(r.headers["retry-after"]) >= 1
        other = auth(corpus.tenant, [GROUP_A], sub="polite")
        assert (await c.get("/v1/documents/hr:leave", headers=other)).status_code == 200


async def test_postgres_unavailable_is_503(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder
) -> None:
    async with running_app(stack, query_settings(), embedder) as (app, c):
        await app.state.pool.close()  # the database is gone for this replica
        h = auth(corpus.tenant, [GROUP_A])
        r = await c.post("/v1/search", json=BODY, headers=h)
        assert r.status_code == 503, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "Traceback" not in r.text and r.json()["title"] == "backend unavailable"
        assert (await c.get("/v1/documents/hr:leave", headers=h)).status_code == 503
        assert (await c.get("/readyz")).status_code == 503
