"""Diversity, parent de-duplication, abstention, rate limiting, the embedding cache, and
the lexical wrapper's mandatory scope."""

from __future__ import annotations

import numpy as np
import pytest

from ragline.auth import Principal
from ragline.errors import PermanentError
from ragline.retrieval.abstain import AbstainPolicy, Evidence, decide, identifiers
from ragline.retrieval.diversity import cap_per_document, mmr_order
from ragline.retrieval.embed import CachedEmbedder
from ragline.retrieval.expansion import dedupe_by_parent
from ragline.retrieval.filters import BoolEquals
from ragline.retrieval.lexical import build_query
from ragline.retrieval.ratelimit import RateLimited, TokenBuckets


def test_cap_per_document_keeps_order() -> None:
    items = [("d1", 1), ("d1", 2), ("d2", 3), ("d1", 4), ("d2", 5)]
    assert cap_per_document(items, lambda x: x[0], 1) == [("d1", 1), ("d2", 3)]
    assert cap_per_document(items, lambda x: x[0], 2) == [*items[:3], ("d2", 5)]


def test_mmr_demotes_near_duplicates() -> None:
    v = [np.array([1.0, 0.0]), np.array([0.99, 0.01]), np.array([0.0, 1.0])]
    assert mmr_order([1.0, 0.9, 0.8], v, lam=1.0, limit=3) == [0, 1, 2]
    assert mmr_order([1.0, 0.9, 0.8], v, lam=0.5, limit=3) == [0, 2, 1]
    assert mmr_order([], [], lam=0.5, limit=3) == []


def test_dedupe_by_parent() -> None:
    items = [("c1", "p1"), ("c2", "p1"), ("c3", None), ("c4", "p2"), ("c5", None)]
    assert dedupe_by_parent(items, lambda x: x[1]) == [items[0], items[2], items[3], items[4]]


def test_abstain_rules() -> None:
    pol = AbstainPolicy(min_similarity=0.3)
    assert decide([], ["q"], pol) == "no_results"
    weak = [Evidence(text="unrelated", similarity=0.1, rerank=None)]
    assert decide(weak, ["q"], pol) == "below_similarity_threshold"
    assert decide([Evidence(text="x", similarity=0.5, rerank=None)], ["q"], pol) is None
    # an exact identifier match answers even with a weak similarity
    code = [Evidence(text="Error ERR-4711 means ...", similarity=0.1, rerank=None)]
    assert decide(code, ["what is err-4711"], pol) is None
    assert decide(weak, ["what is err-4711"], pol) == "below_similarity_threshold"
    rr = AbstainPolicy(min_similarity=0.3, min_rerank=0.0)
    assert decide([Evidence(text="x", similarity=0.9, rerank=-2.0)], ["q"], rr) == (
        "below_rerank_threshold"
    )
    assert decide([Evidence(text="x", similarity=None, rerank=None)], ["q"], pol) is None


def test_identifiers() -> None:
    assert identifiers("ERR-4711 and KB00123 in v2-api, not 2024 or words") == {
        "err-4711",
        "kb00123",
        "v2-api",
    }


def test_token_bucket() -> None:
    now = [0.0]
    tb = TokenBuckets(per_minute=60, burst=2, clock=lambda: now[0])
    tb.take("a")
    tb.take("a")
    with pytest.raises(RateLimited) as e:
        tb.take("a")
    assert e.value.retry_after_s == pytest.approx(1.0)
    tb.take("b")  # buckets are per key
    now[0] = 1.0
    tb.take("a")
    TokenBuckets(per_minute=0, burst=1).take("x")  # disabled


class _Fake:
    dim = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: list[str]) -> list[np.ndarray]:
        self.calls.append(list(texts))
        return [np.array([len(t), 1.0], dtype=np.float32) for t in texts]


async def test_embedding_cache_hits_and_evicts() -> None:
    inner = _Fake()
    c = CachedEmbedder(inner, size=2)
    a1, _b1, a2 = await c.embed(["a  query", "b", "a query"])
    assert inner.calls == [["a  query", "b"]]
    assert np.array_equal(a1, a2)
    await c.embed(["a query"])
    assert len(inner.calls) == 1 and c.hits == 2
    await c.embed(["c"])  # evicts the least recently used ("b")
    await c.embed(["b"])
    assert inner.calls[-1] == ["b"]


def test_lexical_query_always_scoped() -> None:
    p = Principal(tenant="acme", groups=("eng",), subject="u")
    body = build_query(p, "disk full", [BoolEquals("superseded", False)], limit=7)
    filters = body["query"]["bool"]["filter"]
    assert {"terms": {"tenant_id": ["acme"]}} in filters
    assert {"terms": {"acl_groups": ["eng"]}} in filters
    assert {"term": {"superseded": False}} in filters
    assert body["size"] == 7
    with pytest.raises(PermanentError):
        build_query(None, "x", [], limit=1)  # type: ignore[arg-type]


def test_citation_title_falls_back_to_file_name_then_id() -> None:
    from ragline.retrieval.hydrate import citation_title

    assert citation_title("Gateway guide", "/kb/g.md", "fs:g.md") == "Gateway guide"
    assert citation_title(None, "/kb/reference/retry.py", "fs:reference/retry.py") == "retry.py"
    assert citation_title("", "https://wiki.example/pages/On%20call", "wiki:1") == "On call"
    assert citation_title(None, None, "tickets:SUP-1") == "tickets:SUP-1"
