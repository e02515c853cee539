"""bench/relevance_probe.py's pure pieces (no torch, no training): the hard-negative
mining, the ACL rule it replicates, the AUC, and the operating point at a bounded share
of answerable cases abstained (issue 32's probe)."""

from __future__ import annotations

import math
from types import ModuleType

import pytest
from eval_helpers import bench_module


@pytest.fixture(scope="module")
def probe() -> ModuleType:
    return bench_module("relevance_probe")


def test_negatives_skip_relevant_and_duplicates_and_take_n_per_ranking(probe: ModuleType) -> None:
    dense = ["r1", "a", "b", "c", "d"]
    bm25 = ["b", "r2", "a", "e", "f", "g"]
    negs = probe.mine_negatives([dense, bm25], {"r1", "r2"}, [2, 2])
    # dense gives a, b; bm25's b and a are taken already, so e, f
    assert negs == ["a", "b", "e", "f"]
    assert probe.mine_negatives([dense], {"r1"}, [10]) == ["a", "b", "c", "d"]
    assert probe.mine_negatives([dense, bm25], set(), [0, 1]) == ["b"]


def test_visibility_is_any_shared_group(probe: ModuleType) -> None:
    assert probe.visible_to(("ans-all", "ans-g1"), ("ans-g1",))
    assert not probe.visible_to(("ans-all", "ans-g2"), ("ans-g1",))
    assert probe.visible_to(("ans-all",), ("ans-all",))


def test_the_benchmark_acl_hides_a_query_group_its_relevant_documents(probe: ModuleType) -> None:
    # the rule evaluation/answerability.py writes: a document relevant to a group-g query
    # lacks ans-g<g>; principal B<g> holds only ans-g<g>
    doc_relevant_to_g3 = ("ans-all", *(f"ans-g{g}" for g in range(8) if g != 3))
    assert not probe.visible_to(doc_relevant_to_g3, ("ans-g3",))
    assert probe.visible_to(doc_relevant_to_g3, ("ans-g4",))


def test_auc_counts_ties_half(probe: ModuleType) -> None:
    assert probe.auc([3.0, 4.0], [1.0, 2.0]) == 1.0
    assert probe.auc([1.0], [2.0]) == 0.0
    assert probe.auc([1.0, 3.0], [2.0]) == 0.5
    assert probe.auc([2.0], [2.0]) == 0.5
    assert math.isnan(probe.auc([], [1.0]))


def test_threshold_abstains_on_at_most_the_allowed_share_of_answerable(probe: ModuleType) -> None:
    answerable = [float(i) for i in range(100)]  # 0 .. 99
    t = probe.threshold_for(answerable, 0.02)
    assert t == 2.0  # abstaining below 2.0 drops 0 and 1: exactly 2 of 100
    op = probe.at_threshold(t, answerable, [-1.0, 1.5, 2.0, 50.0])
    assert op.answerable_abstained == 2
    assert op.recall == 0.5  # -1.0 and 1.5 abstained; 2.0 (a tie) answered
    assert op.precision == 0.5
    # 49 answerable cases at 2 %: none may be abstained
    few = [float(i) for i in range(49)]
    assert probe.at_threshold(probe.threshold_for(few, 0.02), few, []).answerable_abstained == 0


def test_threshold_with_every_answerable_allowed_abstains_on_everything(probe: ModuleType) -> None:
    assert probe.threshold_for([1.0, 2.0], 1.0) == math.inf
    assert probe.at_threshold(math.inf, [1.0], [5.0]).recall == 1.0


def test_case_scores_take_the_best_relevance_among_the_first_k(probe: ModuleType) -> None:
    rel = {"a": 0.1, "b": 0.9, "c": 0.5, "d": 2.0}
    ranked, cos = ["a", "c", "b", "d"], [0.8, 0.7, 0.6, 0.5]
    assert probe.case_scores(ranked, cos, rel.__getitem__, 3) == {
        "cosine": 0.8,
        "ce@1": 0.1,
        "ce@3": 0.9,
        "ce@k": 0.9,
    }
    assert probe.case_scores(ranked, cos, rel.__getitem__, 4)["ce@3"] == 0.9  # d is 4th
    assert probe.case_scores(ranked, cos, rel.__getitem__, 4)["ce@k"] == 2.0


def test_validation_split_is_seeded_and_a_share_of_the_queries(probe: ModuleType) -> None:
    qs = [str(i) for i in range(100)]
    val = probe.split_validation(qs, 0.2)
    assert len(val) == 20 and val <= set(qs)
    assert val == probe.split_validation(list(reversed(qs)), 0.2)


def test_hit_rate_is_the_share_with_a_relevant_document_in_the_first_k(probe: ModuleType) -> None:
    cases = [(["r", "x", "y"], {"r"}), (["x", "y", "r"], {"r"}), (["x", "y", "z"], {"r"})]
    assert probe.hit_rate(cases, [1, 2, 3]) == {1: 1 / 3, 2: 1 / 3, 3: 2 / 3}
    assert math.isnan(probe.hit_rate([], [1])[1])
