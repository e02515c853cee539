"""The harness's query-service client (ragline-client underneath): tokens, request body,
retries, error translation into the harness's errors.

The HTTP peer is an ``httpx.MockTransport`` standing in for the query service's API
contract (the real service is exercised by tests/e2e/test_golden.py).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import jwt
import pytest
from pydantic import SecretStr

from ragline.errors import BackendUnavailable, ConfigError
from ragline.evaluation.client import QueryClient, QueryServiceError, SearchResponse
from ragline.evaluation.datasets import Principal
from ragline.evaluation.settings import EvalSettings

SECRET = "s3cret-for-tests-only-32-bytes-long!"
ALICE = Principal(subject="alice", tenant="acme", groups=("staff", "engineering"))

OK_BODY = {
    "results": [
        {
            "chunk_id": "c1",
            "document_id": "docs:a",
            "text": "the text",
            "parent_text": None,
            "scores": {"bm25_rank": 1, "dense_rank": 3, "rrf": 0.03, "rerank": None},
            "citation": {"title": "A", "section_path": ["x"]},
            "flags": {"injection_suspect": False, "contains_pii": False, "source_trust": "high"},
            "content_type": "text",
        }
    ],
    "abstained": False,
    "abstain_reason": None,
    "version_scope": {"mode": "current", "note": "current versions"},
    "timings_ms": {"lexical": 3.0, "dense": 5.5, "total": 12.5},
    "cache": "miss",
    "trace_id": "t-1",
    "degraded": [],
    "mode": "hybrid",
}


def settings(**kw: Any) -> EvalSettings:
    base: dict[str, Any] = {"jwt_secret": SecretStr(SECRET), "request_retries": 2}
    base.update(kw)
    return EvalSettings(**base)


def test_secret_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGLINE_QUERY_JWT_SECRET", raising=False)
    monkeypatch.delenv("RAGLINE_EVAL_JWT_SECRET", raising=False)
    with pytest.raises(ConfigError, match="RAGLINE_QUERY_JWT_SECRET"):
        QueryClient(EvalSettings())


def test_settings_read_the_query_services_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLINE_QUERY_JWT_SECRET", "from-env")
    monkeypatch.setenv("RAGLINE_EVAL_QUERY_URL", "http://q:1")
    s = EvalSettings()
    assert s.jwt_secret is not None and s.jwt_secret.get_secret_value() == "from-env"
    assert s.query_url == "http://q:1"


async def test_search_sends_the_contract_and_parses_the_answer() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=OK_BODY)

    async with QueryClient(
        settings(), base_url="http://query/", transport=httpx.MockTransport(handler)
    ) as qc:
        resp, ms = await qc.search(
            ALICE,
            "what?",
            mode="hybrid",
            rerank=True,
            top_k=7,
            filters={"versions": ["4.2"]},
            extra={"as_of": "2023-06-30"},
        )
        await qc.search(ALICE, "again", mode="lexical", rerank=False, top_k=1)
    assert isinstance(resp, SearchResponse) and ms >= 0
    assert resp.results[0].document_id == "docs:a"
    assert resp.server_ms == 12.5
    assert resp.cache == "miss" and resp.trace_id == "t-1"
    assert resp.rerank_applied() is False
    req = seen[0]
    assert req.url.path == "/v1/search"
    body = json.loads(req.content)
    assert body == {
        "query": "what?",
        "top_k": 7,
        "mode": "hybrid",
        "rerank": True,
        "filters": {"versions": ["4.2"]},
        "as_of": "2023-06-30",
    }
    assert "filters" not in json.loads(seen[1].content)
    token = req.headers["authorization"].removeprefix("Bearer ")
    claims = jwt.decode(token, SECRET, algorithms=["HS256"])
    assert (claims["tenant"], claims["groups"]) == ("acme", ["staff", "engineering"])
    # one token per principal, reused
    assert seen[1].headers["authorization"] == req.headers["authorization"]


async def test_retries_503_and_429_then_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []

    async def fake_sleep(s: float) -> None:
        sleeps.append(s)

    monkeypatch.setattr("ragline_client._transport.asyncio.sleep", fake_sleep)
    answers = iter(
        [
            httpx.Response(503, json={"title": "backend down"}),
            httpx.Response(429, headers={"Retry-After": "3"}, json={"title": "slow down"}),
            httpx.Response(200, json=OK_BODY),
        ]
    )
    transport = httpx.MockTransport(lambda r: next(answers))
    async with QueryClient(settings(), transport=transport) as qc:
        resp, _ = await qc.search(ALICE, "q", mode="dense", rerank=False, top_k=5)
    assert resp.results
    assert sleeps == [0.5, 3.0]


async def test_gives_up_as_backend_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_sleep(s: float) -> None:
        return None

    monkeypatch.setattr("ragline_client._transport.asyncio.sleep", no_sleep)
    transport = httpx.MockTransport(lambda r: httpx.Response(503, json={"title": "down"}))
    async with QueryClient(settings(), transport=transport) as qc:
        with pytest.raises(BackendUnavailable):
            await qc.search(ALICE, "q", mode="dense", rerank=False, top_k=5)

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    async with QueryClient(settings(), transport=httpx.MockTransport(refuse)) as qc:
        with pytest.raises(BackendUnavailable, match="unreachable"):
            await qc.search(ALICE, "q", mode="dense", rerank=False, top_k=5)
        assert await qc.ready() is False


async def test_client_errors_are_permanent_with_the_problem_detail() -> None:
    problem = {
        "title": "invalid request",
        "status": 400,
        "detail": "top_k: at most 50",
        "invalid_params": [{"name": "top_k", "reason": "at most 50"}],
    }
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(400, json=problem)

    async with QueryClient(settings(), transport=httpx.MockTransport(handler)) as qc:
        with pytest.raises(QueryServiceError) as err:
            await qc.search(ALICE, "q", mode="hybrid", rerank=False, top_k=100)
    assert err.value.status == 400
    assert "top_k: at most 50" in err.value.detail and "invalid" in err.value.detail
    assert calls == 1  # a 4xx is never retried


async def test_unexpected_shape_is_reported() -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json={"results": [{"x": 1}]}))
    async with QueryClient(settings(), transport=transport) as qc:
        with pytest.raises(QueryServiceError, match="unexpected response shape"):
            await qc.search(ALICE, "q", mode="hybrid", rerank=False, top_k=1)


async def test_ready() -> None:
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200 if r.url.path == "/readyz" else 404, json={})
    )
    async with QueryClient(settings(), transport=transport) as qc:
        assert await qc.ready() is True
