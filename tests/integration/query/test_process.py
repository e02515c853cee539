"""The query service as its own process (``ragline run query``): it starts, serves a
permission-scoped search over HTTP with OpenAPI and metrics, and stops on SIGTERM."""

from __future__ import annotations

import httpx
import pytest
from query_helpers import GROUP_A, GROUP_B, SECRET, Corpus, auth

pytestmark = pytest.mark.integration


async def test_ragline_run_query(service_process, corpus: Corpus) -> None:  # type: ignore[no-untyped-def]
    proc = service_process(
        "query",
        env={"RAGLINE_QUERY_JWT_SECRET": SECRET, "RAGLINE_QUERY_AUDIT_STORE_QUERY": "text"},
    )
    async with httpx.AsyncClient(base_url=proc.http_url, timeout=30) as client:
        await proc.wait_ready_async(timeout_s=120)
        r = await client.post(
            "/v1/search",
            json={"query": "BCANARY payroll bonus vacation days", "top_k": 10},
            headers=auth(corpus.tenant, [GROUP_A]),
        )
        assert r.status_code == 200, r.text
        docs = {x["document_id"] for x in r.json()["results"]}
        assert docs and docs <= corpus.visible[(corpus.tenant, GROUP_A)]
        assert "traceparent" in r.headers
        r = await client.post(
            "/v1/search",
            json={"query": "BCANARY payroll bonus", "top_k": 3},
            headers=auth(corpus.tenant, [GROUP_B]),
        )
        assert "hr:payroll-b" in {x["document_id"] for x in r.json()["results"]}
        assert (await client.post("/v1/search", json={"query": "x"})).status_code == 401
        assert "/v1/search" in (await client.get("/openapi.json")).json()["paths"]
        assert "ragline_query_requests_total" in (await client.get("/metrics")).text
    # uvicorn shuts down gracefully, then re-raises SIGTERM (exit -15) by design
    assert await proc.terminate_async() == 0  # graceful: drained, exit code 0
    assert "Traceback" not in proc.log()
