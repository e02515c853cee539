"""Search behaviour against the real stack: hybrid beats either retriever alone, versions
and time, deleted/superseded content, citations, flags, audit, errors."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import httpx
import psycopg
import pytest
from query_helpers import GROUP_A, GROUP_B, Corpus, auth, make_token

from ragline.config import Settings

pytestmark = pytest.mark.integration


async def _search(
    client: httpx.AsyncClient,
    corpus: Corpus,
    body: dict[str, Any],
    groups: list[str] | None = None,
    tenant: str | None = None,
) -> dict[str, Any]:
    r = await client.post(
        "/v1/search", json=body, headers=auth(tenant or corpus.tenant, groups or [GROUP_A])
    )
    assert r.status_code == 200, r.text
    return r.json()


def _docs(resp: dict[str, Any]) -> list[str]:
    return [r["document_id"] for r in resp["results"]]


async def test_hybrid_finds_error_code_dense_misses(client: httpx.AsyncClient, corpus: Corpus):
    body = {"query": "ERR-4711", "top_k": 3, "max_per_document": 1}
    lexical = await _search(client, corpus, {**body, "mode": "lexical"})
    dense = await _search(client, corpus, {**body, "mode": "dense"})
    hybrid = await _search(client, corpus, {**body, "mode": "hybrid"})
    target = "kb:ingest-troubleshooting"
    assert _docs(lexical)[0] == target
    assert target not in _docs(dense), _docs(dense)
    assert target in _docs(hybrid)
    hit = next(r for r in hybrid["results"] if r["document_id"] == target)
    assert hit["scores"]["bm25_rank"] == 1 and hit["scores"]["fused"] > 0
    assert hit["scores"]["rrf"] == hit["scores"]["fused"]  # the deprecated old name
    assert not hybrid["abstained"]


async def test_hybrid_finds_paraphrase_bm25_misses(client: httpx.AsyncClient, corpus: Corpus):
    q = "How much annual leave do staff receive?"
    body = {"query": q, "top_k": 3}
    lexical = await _search(client, corpus, {**body, "mode": "lexical"})
    dense = await _search(client, corpus, {**body, "mode": "dense"})
    hybrid = await _search(client, corpus, {**body, "mode": "hybrid"})
    target = "Every employee is entitled to twenty-five vacation days yearly."
    assert target not in [r["text"] for r in lexical["results"]]
    assert dense["results"][0]["text"] == target
    assert target in [r["text"] for r in hybrid["results"]]
    top = hybrid["results"][0]
    assert top["scores"]["dense_rank"] is not None and top["scores"]["dense_score"] > 0.3


async def test_citation_flags_and_timings(client: httpx.AsyncClient, corpus: Corpus):
    resp = await _search(client, corpus, {"query": "reveal the admin password", "top_k": 5})
    hit = next(r for r in resp["results"] if r["flags"]["injection_suspect"])
    assert hit["document_id"] == "hr:leave"
    c = hit["citation"]
    assert c["title"] == "Time off" and c["section_path"] == ["Time off", "part 4"]
    assert c["uri"] == "https://docs.example/hr:leave"
    assert c["line_start"] == 31 and c["line_end"] == 39
    assert hit["flags"]["source_trust"] == "medium"
    for stage in ("embed", "dense", "lexical", "hydrate", "total", "backend"):
        assert stage in resp["timings_ms"]
    assert resp["cache"] == "off" and len(resp["trace_id"]) == 32
    assert resp["version_scope"]["mode"] == "current"
    # PII flag travels from the chunk (group B user)
    b = await _search(client, corpus, {"query": "payroll bonus table", "top_k": 3}, [GROUP_B])
    assert any(r["flags"]["contains_pii"] for r in b["results"])


async def test_parent_expansion_dedupes_parents(client: httpx.AsyncClient, corpus: Corpus):
    body = {
        "query": "disk snapshots quota platform team",
        "top_k": 10,
        "max_per_document": 5,
        "mode": "lexical",
    }
    plain = await _search(client, corpus, body)
    expanded = await _search(client, corpus, {**body, "expand_parents": True})
    disk_plain = [r for r in plain["results"] if r["document_id"] == "ops:disk"]
    disk_exp = [r for r in expanded["results"] if r["document_id"] == "ops:disk"]
    assert len(disk_plain) >= 3
    # 5 children under 2 parents: at most one result per parent survives
    assert 1 <= len(disk_exp) <= 2
    for r in disk_exp:
        assert r["parent_text"] and r["text"] in r["parent_text"]
    assert all(r["parent_text"] is None for r in plain["results"])


async def test_max_per_document(client: httpx.AsyncClient, corpus: Corpus):
    body = {"query": "disk snapshots quota platform team", "top_k": 10, "mode": "lexical"}
    one = await _search(client, corpus, {**body, "max_per_document": 1})
    assert len(_docs(one)) == len(set(_docs(one)))


async def test_deleted_content_never_returns(client: httpx.AsyncClient, corpus: Corpus):
    for mode in ("hybrid", "lexical", "dense"):
        for history in (False, True):
            resp = await _search(
                client,
                corpus,
                {
                    "query": "DELCANARY disk cleanup memo",
                    "mode": mode,
                    "top_k": 20,
                    "include_history": history,
                },
            )
            assert "tmp:deleted" not in _docs(resp)
    # a deleted document is gone for every reader (issue 12, defect 7)
    r = await client.get("/v1/documents/tmp:deleted", headers=auth(corpus.tenant, [GROUP_A]))
    assert r.status_code == 404


async def test_superseded_only_when_asked(client: httpx.AsyncClient, corpus: Corpus):
    q = {"query": "travel reimbursement hotel per night", "top_k": 5}
    current = await _search(client, corpus, q)
    assert "pol:travel-v2" in _docs(current) and "pol:travel-v1" not in _docs(current)
    history = await _search(client, corpus, {**q, "include_history": True})
    assert {"pol:travel-v1", "pol:travel-v2"} <= set(_docs(history))
    named = await _search(client, corpus, {**q, "query": "travel hotel limit in version 1.0"})
    assert _docs(named)[0] == "pol:travel-v1" and "pol:travel-v2" not in _docs(named)
    assert named["version_scope"]["mode"] == "explicit"
    by_filter = await _search(client, corpus, {**q, "filters": {"versions": ["1.0"]}})
    assert _docs(by_filter) == ["pol:travel-v1"]
    # a version read from the text keeps unversioned documents; a client filter does not
    disk = {"query": "how often are disk quotas reviewed in version 1.0", "top_k": 5}
    assert "ops:disk" in _docs(await _search(client, corpus, disk))
    strict = await _search(client, corpus, {**disk, "filters": {"versions": ["1.0"]}})
    assert "ops:disk" not in _docs(strict)
    # ... but only current ones: an unversioned document not yet in force stays out
    future = {"query": "FUTURECANARY remote work days in version 1.0", "top_k": 5}
    assert "pol:future" not in _docs(await _search(client, corpus, future))
    compare = await _search(client, corpus, {**q, "query": "compare travel hotel v1.0 vs v2.0"})
    assert compare["version_scope"]["mode"] == "compare"
    labels = {r["document_id"]: r["version_label"] for r in compare["results"]}
    versioned = {d: lab for d, lab in labels.items() if d.startswith("pol:travel")}
    assert versioned == {"pol:travel-v1": "1.0", "pol:travel-v2": "2.0"}
    # each side also keeps current unversioned documents, labelled with no side
    assert all(lab is None for d, lab in labels.items() if d not in versioned)
    as_of = await _search(client, corpus, {**q, "as_of": "2023-06-01"})
    assert "pol:travel-v1" in _docs(as_of) and "pol:travel-v2" not in _docs(as_of)
    assert as_of["version_scope"]["mode"] == "as_of"
    as_of_text = await _search(client, corpus, {**q, "query": "travel hotel as of 2024"})
    assert "pol:travel-v2" in _docs(as_of_text) and "pol:travel-v1" not in _docs(as_of_text)


async def test_future_documents_need_as_of(client: httpx.AsyncClient, corpus: Corpus):
    q = {"query": "FUTURECANARY remote work days", "top_k": 5}
    assert "pol:future" not in _docs(await _search(client, corpus, q))
    later = await _search(client, corpus, {**q, "as_of": "2099-06-01"})
    assert "pol:future" in _docs(later)


async def test_filters_restrict(client: httpx.AsyncClient, corpus: Corpus):
    resp = await _search(
        client,
        corpus,
        {
            "query": "error code service",
            "top_k": 10,
            "filters": {"document_ids": ["kb:err-4712", "ops:disk"]},
        },
    )
    assert set(_docs(resp)) <= {"kb:err-4712", "ops:disk"} and resp["results"]
    none = await _search(client, corpus, {"query": "error code", "filters": {"source_type": "x"}})
    assert none["results"] == [] and none["abstained"]
    assert none["abstain_reason"] == "no_results"


async def test_abstains_on_unrelated_query(client: httpx.AsyncClient, corpus: Corpus):
    resp = await _search(client, corpus, {"query": "recipe for chocolate banana muffins"})
    assert resp["abstained"] and resp["results"] == []
    assert resp["abstain_reason"] == "below_similarity_threshold"
    # hybrid: the answerability model's probability comes with it, below its threshold
    ev = resp["evidence"]
    assert ev["answerable_probability"] is not None and ev["answerable_probability"] < 0.5


async def test_fan_out_queries(client: httpx.AsyncClient, corpus: Corpus):
    resp = await _search(
        client,
        corpus,
        {
            "queries": ["ERR-4711", "How much annual leave do staff receive?"],
            "top_k": 6,
        },
    )
    idx = {r["query_index"] for r in resp["results"]}
    assert idx == {0, 1}
    assert "kb:ingest-troubleshooting" in _docs(resp) and "hr:leave" in _docs(resp)


async def test_errors_are_problems(client: httpx.AsyncClient, corpus: Corpus):
    h = auth(corpus.tenant, [GROUP_A])
    r = await client.post(
        "/v1/search", json={"query": "x", "filters": {"acl_groups": ["b"]}}, headers=h
    )
    assert r.status_code == 400
    body = r.json()
    assert r.headers["content-type"].startswith("application/problem+json")
    assert body["invalid_params"][0]["name"] == "filters.acl_groups"
    r = await client.post("/v1/search", json={"query": "x", "tenant": "other"}, headers=h)
    assert r.status_code == 400  # the principal never comes from the body
    r = await client.post("/v1/search", json={"query": "x", "top_k": 0}, headers=h)
    assert r.status_code == 422 and r.json()["invalid_params"][0]["name"] == "top_k"
    r = await client.post(
        "/v1/search", content=b"{nope", headers={**h, "content-type": "application/json"}
    )
    assert r.status_code == 400
    r = await client.post("/v1/search", json={"query": "x", "queries": ["y"]}, headers=h)
    assert r.status_code == 422
    r = await client.post("/v1/search", json={"queries": ["q"] * 20}, headers=h)
    assert r.status_code == 400 and r.json()["invalid_params"][0]["name"] == "queries"
    r = await client.get("/v1/documents/nope:nope", headers=h)
    assert r.status_code == 404 and "trace_id" in r.json()


async def test_bad_tokens_get_401(client: httpx.AsyncClient, corpus: Corpus):
    body = {"query": "vacation"}
    r = await client.post("/v1/search", json=body)
    assert r.status_code == 401 and "Bearer" in r.headers["www-authenticate"]
    expired = make_token(corpus.tenant, [GROUP_A], exp_in=-600)
    r = await client.post("/v1/search", json=body, headers={"Authorization": f"Bearer {expired}"})
    assert r.status_code == 401 and "expired" in r.json()["detail"]
    good = make_token(corpus.tenant, [GROUP_A])
    head, _payload, sig = good.split(".")
    tampered = make_token(corpus.tenant, [GROUP_B]).split(".")[1]
    for token in (f"{head}.{tampered}.{sig}", good[:-4] + "AAAA", "garbage"):
        r = await client.post("/v1/search", json=body, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401, token
    r = await client.post("/v1/search", json=body, headers=auth(corpus.tenant, []))
    assert r.status_code == 403
    r = await client.get("/v1/documents/hr:leave", headers={"Authorization": "Bearer x.y.z"})
    assert r.status_code == 401


async def test_audit_row_written_append_only(
    client: httpx.AsyncClient, corpus: Corpus, stack: Settings
):
    q = f"audit probe {time.time()} vacation days"
    resp = await _search(client, corpus, {"query": q, "top_k": 3})
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as c:
        cur = await c.execute(
            "SELECT tenant_id, subject, groups, query_hash, query_text, chunk_ids, cache, mode"
            " FROM query_audit WHERE trace_id = %s",
            (resp["trace_id"],),
        )
        rows = await cur.fetchall()
    assert len(rows) == 1
    tenant, subject, groups, qhash, qtext, chunk_ids, cache, mode = rows[0]
    assert (tenant, subject, groups, cache, mode) == (
        corpus.tenant,
        "tester",
        [GROUP_A],
        "off",
        "hybrid",
    )
    assert qtext is None and len(qhash) == 64
    # keyed (issue 14): the plain sha256 of the query would be dictionary-reversible
    assert qhash != hashlib.sha256(json.dumps([q], ensure_ascii=False).encode()).hexdigest()
    assert chunk_ids == [r["chunk_id"] for r in resp["results"]]
    # the query role can insert but never read, change or delete audit rows
    async with await psycopg.AsyncConnection.connect(stack.query_dsn(), autocommit=True) as c:
        for stmt in (
            "SELECT count(*) FROM query_audit",
            "DELETE FROM query_audit",
            "UPDATE query_audit SET subject = 'x'",
            "TRUNCATE query_audit",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await c.execute(stmt)
    # even the owner cannot update; the sweep deletes only past the retention
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as c:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await c.execute("UPDATE query_audit SET subject = 'x'")
        cur = await c.execute("SELECT query_audit_sweep(1)")
        row = await cur.fetchone()
        assert row is not None and row[0] == 0


async def test_health_ready_metrics_openapi(client: httpx.AsyncClient, corpus: Corpus):
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {
        "postgres": "ok",
        "opensearch": "ok",
    }
    await _search(client, corpus, {"query": "vacation days"})
    metrics = (await client.get("/metrics")).text
    assert 'ragline_query_requests_total{mode="hybrid",route="search",status="200"}' in metrics
    assert 'ragline_query_stage_seconds_bucket{le="0.001",stage="dense"}' in metrics
    spec = (await client.get("/openapi.json")).json()
    assert "/v1/search" in spec["paths"] and "/v1/documents/{document_id}" in spec["paths"]


async def test_versions_resolve_only_against_the_callers_labels(
    client: httpx.AsyncClient, corpus: Corpus
):
    """Version mentions resolve against labels read under RLS: group B and the other tenant
    cannot see the travel policy's 1.0/2.0, so for them "version 1.0" resolves to nothing
    (reported as unresolved, no restriction) and no label of group A is ever echoed."""
    q = {"query": "travel hotel limit in version 1.0 or v2", "top_k": 5}
    mine = await _search(client, corpus, q)
    assert mine["version_scope"]["mode"] == "explicit"
    assert mine["version_scope"]["versions"] == ["1.0", "2.0"]
    for groups, tenant in (([GROUP_B], None), ([GROUP_A], corpus.other_tenant)):
        theirs = await _search(client, corpus, q, groups=groups, tenant=tenant)
        scope = theirs["version_scope"]
        assert scope["mode"] == "current" and scope["versions"] == []
        assert scope["unresolved"] == ["1.0", "2"]
        assert not {"pol:travel-v1", "pol:travel-v2"} & set(_docs(theirs))
