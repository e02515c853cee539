"""RRF against a hand-computed example, plus properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.retrieval.fusion import rrf


def test_rrf_matches_hand_computed_example() -> None:
    # dense: a b c ; lexical: c a d   (k = 60)
    # a: 1/61 + 1/62 = 0.032522   c: 1/63 + 1/61 = 0.032266
    # b: 1/62 = 0.016129          d: 1/63 = 0.015873
    fused = rrf({"dense": ["a", "b", "c"], "lexical": ["c", "a", "d"]}, k=60)
    assert [h.key for h in fused] == ["a", "c", "b", "d"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1].score == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2].score == pytest.approx(1 / 62)
    assert fused[3].score == pytest.approx(1 / 63)
    assert fused[1].ranks == {"dense": 3, "lexical": 1}


def test_weights_change_the_order() -> None:
    # lexical weighted 3x: c = 3/61 + 1/63 beats a = 1/61 + 3/62
    fused = rrf({"dense": ["a", "b", "c"], "lexical": ["c", "a", "d"]}, weights={"lexical": 3.0})
    assert [h.key for h in fused][:2] == ["c", "a"]
    assert fused[0].score == pytest.approx(3 / 61 + 1 / 63)


def test_small_k_rewards_top_ranks_more() -> None:
    fused = rrf({"x": ["a", "b"], "y": ["b", "c"]}, k=1)
    assert fused[0].key == "b"  # 1/3 + 1/2 > 1/2


def test_ties_are_deterministic() -> None:
    fused = rrf({"x": ["b"], "y": ["a"]})
    assert [h.key for h in fused] == ["a", "b"]


def test_duplicate_in_one_list_counts_once() -> None:
    fused = rrf({"x": ["a", "a", "b"]})
    assert fused[0].score == pytest.approx(1 / 61)
    assert fused[1].ranks == {"x": 3}


def test_invalid_k() -> None:
    with pytest.raises(ValueError):
        rrf({"x": ["a"]}, k=0)


@given(
    st.lists(st.sampled_from("abcdefgh"), max_size=8, unique=True),
    st.lists(st.sampled_from("abcdefgh"), max_size=8, unique=True),
)
def test_rrf_properties(xs: list[str], ys: list[str]) -> None:
    fused = rrf({"x": xs, "y": ys})
    assert {h.key for h in fused} == set(xs) | set(ys)
    scores = [h.score for h in fused]
    assert scores == sorted(scores, reverse=True)
    for h in fused:  # the score is exactly the sum of the reciprocal ranks
        assert h.score == pytest.approx(sum(1 / (60 + r) for r in h.ranks.values()))
