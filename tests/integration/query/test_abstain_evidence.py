"""The response's ``evidence``: an abstention still says how strong the best evidence was
(the evaluation harness replays the threshold from it)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from query_helpers import GROUP_A, Corpus, auth

pytestmark = pytest.mark.integration


async def _search(
    client: httpx.AsyncClient, corpus: Corpus, body: dict[str, Any]
) -> dict[str, Any]:
    r = await client.post("/v1/search", json=body, headers=auth(corpus.tenant, [GROUP_A]))
    assert r.status_code == 200, r.text
    body_out: dict[str, Any] = r.json()
    return body_out


async def test_abstention_reports_the_best_similarity(
    client: httpx.AsyncClient, corpus: Corpus
) -> None:
    weak = await _search(client, corpus, {"query": "recipe for chocolate banana muffins"})
    assert weak["abstained"] and weak["results"] == []
    ev = weak["evidence"]
    assert ev["signal"] == "similarity"
    assert ev["best_similarity"] is not None and ev["best_similarity"] < ev["threshold"]

    strong = await _search(
        client, corpus, {"query": "How much annual leave do staff receive?", "mode": "dense"}
    )
    assert not strong["abstained"]
    best = max(r["scores"]["dense_score"] for r in strong["results"])
    assert strong["evidence"]["signal"] == "similarity"
    assert strong["evidence"]["best_similarity"] == pytest.approx(best)
    assert strong["evidence"]["best_similarity"] >= strong["evidence"]["threshold"]

    lexical = await _search(client, corpus, {"query": "ERR-4711", "mode": "lexical"})
    assert not lexical["abstained"]
    assert lexical["evidence"]["signal"] in {"identifier", "none"}
