"""Coverage weighting through the real stack (issue 37): the service reads the query's
words in the caller's corpus (OpenSearch, under the lexical leg's scope) BEFORE fusion,
and a question whose best BM25 hit holds only a small share of them gets the dense
order (the default since session 6 of wave 3); the same corpus and question with the
weighting off lets BM25's noise move it.

The corpus is built so the numbers are known: the question's three corpus words
("safe", "dinghy", "wind") are each held by one unrelated chunk (equal IDF: the best
BM25 hit holds a third of the query, below the 0.35 where the floor starts), one word
per chunk is far below the evidence ramp (2 idf units), and the chunk that answers it
shares no word with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from query_corpus import Doc, seed_tenant
from query_helpers import GROUP_A, auth, query_settings, running_app

from ragline.config import Settings
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.embed import QueryEmbedder

pytestmark = pytest.mark.integration

QUESTION = "Is it safe to take a dinghy out when the wind picks up?"
DOCS = [
    ("ans:harbour", "Harbour notes", "Small boats should stay in port if strong gusts are due."),
    ("n:storage", "Facilities", "Dinghy storage racks in the basement are assigned by the desk."),
    ("n:turbine", "Grants", "The wind turbine subsidy form is due before the yearly audit."),
    ("n:office", "Office", "The office safe combination changes every quarter, ask reception."),
    ("f:canteen", "Canteen", "The canteen serves soup on Mondays and curry on Thursdays."),
    ("f:parking", "Parking", "Visitor parking permits are issued at the main gate."),
    ("f:printing", "Printing", "Colour printing needs a cost centre code on the job ticket."),
]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def tenant(stack: Settings, embedder: QueryEmbedder) -> str:
    name = unique_tenant("cov")
    docs = [Doc(document_id=d, title=t, texts=(x,), groups=(GROUP_A,)) for d, t, x in DOCS]
    await seed_tenant(stack, name, docs, embedder, name="coverage-seed")
    return name


@pytest_asyncio.fixture(loop_scope="session")
async def apps(
    stack: Settings, embedder: QueryEmbedder
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """The service with its defaults (the fitted coverage and evidence weighting), and
    with every lexical weighting off; both never abstain (the order is under test, not
    abstention)."""
    quiet = {"abstain_min_similarity": 0.0, "abstain_model": "similarity"}
    off = {
        "lexical_coverage_none": 0.0,
        "lexical_coverage_ramp": 0.0,
        "lexical_evidence_none": 0.0,
        "lexical_evidence_ramp": 0.0,
    }
    async with (
        running_app(stack, query_settings(**quiet), embedder) as (_, weighted),
        running_app(stack, query_settings(**quiet, **off), embedder) as (_, plain),
    ):
        yield weighted, plain


async def _order(client: httpx.AsyncClient, tenant: str, mode: str) -> list[dict[str, Any]]:
    r = await client.post(
        "/v1/search",
        json={"query": QUESTION, "mode": mode, "top_k": len(DOCS), "max_per_document": 1},
        headers=auth(tenant, [GROUP_A]),
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert not body["abstained"]
    return list(body["results"])


async def test_a_question_its_best_bm25_hit_barely_covers_gets_the_dense_order(
    tenant: str, apps: tuple[httpx.AsyncClient, httpx.AsyncClient]
) -> None:
    weighted, plain = apps
    dense = [r["document_id"] for r in await _order(weighted, tenant, "dense")]
    lexical = [r["document_id"] for r in await _order(weighted, tenant, "lexical")]
    assert set(lexical) == {"n:storage", "n:turbine", "n:office"}  # one word each
    assert dense[0] == "ans:harbour"
    hybrid = await _order(weighted, tenant, "hybrid")
    assert [r["document_id"] for r in hybrid] == dense
    before = [r["document_id"] for r in await _order(plain, tenant, "hybrid")]
    assert before != dense, "the corpus no longer shows BM25 noise moving the fusion"
