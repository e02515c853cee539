"""The abstention assessment: which rule decided, and the evidence strength it saw."""

from __future__ import annotations

from ragline.retrieval.abstain import AbstainPolicy, Evidence, assess
from ragline.retrieval.api_models import AbstainEvidence, SearchResponse

POL = AbstainPolicy(min_similarity=0.3)


def ev(sim: float | None, rerank: float | None = None, text: str = "x") -> Evidence:
    return Evidence(text=text, similarity=sim, rerank=rerank)


def test_similarity_decision_carries_the_best_score() -> None:
    weak = assess([ev(0.12), ev(0.21), ev(None)], ["q"], POL)
    assert (weak.reason, weak.signal) == ("below_similarity_threshold", "similarity")
    assert weak.best_similarity == 0.21 and weak.threshold == 0.3
    strong = assess([ev(0.12), ev(0.55)], ["q"], POL)
    assert (strong.reason, strong.signal, strong.best_similarity) == (None, "similarity", 0.55)


def test_other_rules_name_themselves() -> None:
    empty = assess([], ["q"], POL)
    assert (empty.reason, empty.signal, empty.best_similarity, empty.threshold) == (
        "no_results",
        "no_results",
        None,
        None,
    )
    # an identifier match answers, and the (weak) similarity is still reported
    code = assess([ev(0.1, text="ERR-4711 means ...")], ["what is err-4711"], POL)
    assert (code.reason, code.signal, code.best_similarity) == (None, "identifier", 0.1)
    lexical = assess([ev(None)], ["q"], POL)
    assert (lexical.reason, lexical.signal, lexical.best_similarity) == (None, "none", None)
    rr = assess([ev(0.9, -2.0), ev(0.2, -1.0)], ["q"], AbstainPolicy(min_rerank=0.0))
    assert (rr.reason, rr.signal, rr.threshold) == ("below_rerank_threshold", "rerank", 0.0)
    assert (rr.best_similarity, rr.best_rerank) == (0.9, -1.0)
    # rerank scores without a rerank threshold: similarity decides
    assert assess([ev(0.2, 5.0)], ["q"], POL).signal == "similarity"


def test_response_evidence_is_additive() -> None:
    # a response stored before the field existed (the answer cache) still parses
    old = {
        "results": [],
        "abstained": True,
        "abstain_reason": "no_results",
        "version_scope": {"mode": "current", "note": "n"},
        "timings_ms": {},
        "trace_id": "t",
    }
    assert SearchResponse.model_validate(old).evidence is None
    new = SearchResponse.model_validate(
        old | {"evidence": {"signal": "similarity", "best_similarity": 0.2, "threshold": 0.3}}
    )
    assert new.evidence == AbstainEvidence(signal="similarity", best_similarity=0.2, threshold=0.3)
