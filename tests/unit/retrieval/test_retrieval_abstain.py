"""The abstention assessment: which rule decided, and the evidence strength it saw."""

from __future__ import annotations

from ragline.retrieval.abstain import (
    AbstainPolicy,
    Evidence,
    IdentifierStats,
    assess,
    rule_identifiers,
)
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


# ---------------------------------------------------------- identifiers weighed by specificity
# (issue 21, defect 4): an identifier that is everywhere in the caller's corpus is no
# evidence; one that is nowhere is a reason to abstain


def _stats(documents: int, **df: int) -> IdentifierStats:
    return IdentifierStats(documents=documents, df={k.replace("_", "-"): v for k, v in df.items()})


def test_a_ubiquitous_identifier_does_not_answer_on_its_own() -> None:
    weak = [ev(0.2, text="the TN-300 control head draws 9 W")]
    q = ["Does the TN-300 accept a satellite compass over Ethernet?"]
    # old rule: the model name appears verbatim, so the search answered
    assert assess(weak, q, POL).signal == "identifier"
    common = assess(weak, q, POL, _stats(20, tn_300=12))
    assert (common.reason, common.signal) == ("below_similarity_threshold", "similarity")


def test_a_rare_identifier_still_answers_with_weak_similarity() -> None:
    weak = [ev(0.1, text="TN-E402: rudder feedback does not match")]
    rare = assess(weak, ["TN-E402"], POL, _stats(20, tn_e402=1))
    assert (rare.reason, rare.signal) == (None, "identifier")
    # small corpora: one document is always specific enough
    assert assess(weak, ["TN-E402"], POL, _stats(3, tn_e402=1)).reason is None


def test_an_identifier_found_nowhere_abstains() -> None:
    near = [ev(0.6, text="FS-1182: autopilot drops out")]  # a look-alike, good similarity
    q = ["What was the root cause of FS-9999?"]
    assert assess(near, q, POL).reason is None  # old rule: similarity answered
    miss = assess([ev(0.35, text="FS-1182")], q, POL, _stats(20, fs_9999=0))
    assert (miss.reason, miss.signal) == ("identifier_not_found", "identifier")
    assert miss.threshold == POL.identifier_missing_min_similarity
    # strong evidence by meaning still answers ("IFIT1" asked, "IFIT-1" written)
    assert assess(near, q, POL, _stats(20, fs_9999=0)).reason is None
    # one of two identifiers found: the found one decides, the other is ignored
    both = assess(
        [ev(0.1, text="alarm TN-E515")], ["TN-E515 on FS-9999?"], POL, _stats(20, tn_e515=2)
    )
    assert (both.reason, both.signal) == (None, "identifier")


def test_versions_and_dates_are_not_identifiers_for_the_rule() -> None:
    assert rule_identifiers(["what changed in v6.1 and 6.x on 2025-09-03 for TN-300"]) == {"tn-300"}
    # quantities are not identifiers either
    assert rule_identifiers(["a 100g dose, 5mmol/L, a 10-minute wait, 3-fold, 2.5mg"]) == set()
    # no rule identifier: similarity decides even with statistics
    assert assess([ev(0.6)], ["rudder gain in v6.1"], POL, _stats(20)).signal == "similarity"


# ---------------------------------------------------------- the missing identifier's share
# (issue 20): an identifier found nowhere is a reason to abstain when the query is about
# it, not when a long claim names it in passing (SciFact 1098's "(C1698)")


def test_a_missing_identifier_named_in_passing_leaves_it_to_similarity() -> None:
    pol = AbstainPolicy(min_similarity=0.3, identifier_missing_min_share=0.2)
    hits = [ev(0.34, text="ribosome decoding states")]
    claim = ["Stacking is more stable when a purine is present in the +5 position (C1698)."]
    lookup = ["What was the root cause of ticket SUP-9999?"]
    no_c1698 = _stats(5183, c1698=0)
    # the old rule (share 0: every query) abstained on the claim
    old = AbstainPolicy(min_similarity=0.3, identifier_missing_min_share=0.0)
    assert assess(hits, claim, old, no_c1698).reason == "identifier_not_found"
    passing = assess(hits, claim, pol, no_c1698)
    assert (passing.reason, passing.signal) == (None, "similarity")
    # a lookup of the identifier still abstains, and a bare identifier always does
    assert assess(hits, lookup, pol, _stats(60, sup_9999=0)).reason == "identifier_not_found"
    bare = assess([ev(0.38)], ["SUP-9999"], pol, _stats(60, sup_9999=0))
    assert bare.reason == "identifier_not_found"
    # below the similarity threshold the claim still abstains, by similarity
    low = assess([ev(0.2)], claim, pol, no_c1698)
    assert (low.reason, low.signal) == ("below_similarity_threshold", "similarity")


def test_a_found_spelling_variant_is_not_missing() -> None:
    """The statistics count IFIT-1 for IFIT1 (ident_match); a result spelling it IFIT-1
    answers as a verbatim match would."""
    hits = [ev(0.1, text="Interferon-induced IFIT-1 restricts capped RNA")]
    got = assess(hits, ["IFIT1 speeds viral replication"], POL, _stats(5183, ifit1=1))
    assert (got.reason, got.signal) == (None, "identifier")
