"""RRF against a hand-computed example, plus properties."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.retrieval.fusion import rrf, score_fusion


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


# ---- score fusion (min-max normalised, weighted sum)


def test_score_fusion_matches_hand_computed_example() -> None:
    # dense a .9 b .5 c .1 -> 1, .5, 0 ; lexical c 8 a 4 d 0 -> 1, .5, 0
    fused = score_fusion(
        {"dense": [("a", 0.9), ("b", 0.5), ("c", 0.1)], "lexical": [("c", 8), ("a", 4), ("d", 0)]}
    )
    got = {h.key: h.score for h in fused}
    assert got == pytest.approx({"a": 1.5, "c": 1.0, "b": 0.5, "d": 0.0})
    assert [h.key for h in fused] == ["a", "c", "b", "d"]
    assert fused[1].ranks == {"dense": 3, "lexical": 1}


def test_score_fusion_keeps_a_strong_single_leg_hit_above_weak_agreement() -> None:
    """golden pp-05: dense ranks the answer 2nd with almost the top cosine, BM25 misses
    it; RRF buries it under chunks both legs rank weakly, score fusion does not."""
    dense = [("top", 0.58), ("answer", 0.56)] + [(f"n{i}", 0.2 - i * 0.01) for i in range(10)]
    lexical = [("top", 3.1)] + [(f"n{i}", 1.1 - i * 0.08) for i in range(10)]
    by_rank = rrf({"dense": [k for k, _ in dense], "lexical": [k for k, _ in lexical]})
    by_score = score_fusion({"dense": dense, "lexical": lexical})
    assert [h.key for h in by_rank].index("answer") >= 10  # the anomaly
    assert [h.key for h in by_score].index("answer") == 1  # the fix


def test_score_fusion_degenerate_lists() -> None:
    assert score_fusion({"dense": [], "lexical": []}) == []
    one = score_fusion({"dense": [("a", -3.0)]})  # a single score normalises to 1
    assert one[0].score == 1.0
    same = score_fusion({"lexical": [("a", 2.0), ("b", 2.0)]})
    assert [h.score for h in same] == [1.0, 1.0] and [h.key for h in same] == ["a", "b"]
    bad = score_fusion({"dense": [("a", float("nan")), ("b", 0.5), ("c", 0.1)]})
    assert {h.key: h.score for h in bad}["a"] == 0.0  # non-finite counts as the minimum
    dup = score_fusion({"dense": [("a", 0.9), ("b", 0.1), ("a", 0.05)]})
    assert dup[0].key == "a" and dup[0].score == 1.0  # first entry wins


_scored = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.floats(-1e6, 1e6, allow_nan=False)), max_size=12
)


@given(_scored, _scored, st.floats(0, 5), st.floats(0, 5))
def test_score_fusion_properties(
    dense: list[tuple[str, float]], lexical: list[tuple[str, float]], wd: float, wl: float
) -> None:
    fused = score_fusion({"dense": dense, "lexical": lexical}, weights={"dense": wd, "lexical": wl})
    keys = [h.key for h in fused]
    assert sorted(keys) == sorted({k for k, _ in dense} | {k for k, _ in lexical})
    scores = [h.score for h in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= wd + wl + 1e-9 for s in scores)


# ---- score fusion, z-score normalisation


def test_zscore_fusion_matches_hand_computed_example() -> None:
    # dense .9 .5 .1: std .3266 -> (v - .1) / std = 2.449, 1.2247, 0
    # lexical 8 4 0: std 3.266 -> 2.449, 1.2247, 0 (the same shape, ten times the scale)
    fused = score_fusion(
        {"dense": [("a", 0.9), ("b", 0.5), ("c", 0.1)], "lexical": [("c", 8), ("a", 4), ("d", 0)]},
        norm="zscore",
    )
    got = {h.key: h.score for h in fused}
    z = 0.8 / (0.32 / 3) ** 0.5
    assert got == pytest.approx({"a": z + z / 2, "c": z, "b": z / 2, "d": 0.0}, rel=1e-6)
    assert [h.key for h in fused] == ["a", "c", "b", "d"]


def test_zscore_weighs_a_leg_whose_top_stands_out() -> None:
    """Min-max gives every list's top 1.0; z-scores give a top that stands out from a
    flat list more than a top in a list of evenly spread scores."""
    flat_with_peak = [("peak", 10.0)] + [(f"f{i}", 1.0) for i in range(9)]
    spread = [(f"s{i}", 1.0 - i * 0.1) for i in range(10)]
    by_z = score_fusion({"lexical": flat_with_peak, "dense": spread}, norm="zscore")
    by_minmax = score_fusion({"lexical": flat_with_peak, "dense": spread})
    z = {h.key: h.score for h in by_z}
    mm = {h.key: h.score for h in by_minmax}
    assert mm["peak"] == mm["s0"] == 1.0
    assert z["peak"] > z["s0"]


def test_zscore_degenerate_lists() -> None:
    assert score_fusion({"dense": []}, norm="zscore") == []
    assert score_fusion({"dense": [("a", -3.0)]}, norm="zscore")[0].score == 1.0
    same = score_fusion({"lexical": [("a", 2.0), ("b", 2.0)]}, norm="zscore")
    assert [h.score for h in same] == [1.0, 1.0]
    bad = score_fusion({"dense": [("a", float("inf")), ("b", 0.5), ("c", 0.1)]}, norm="zscore")
    assert {h.key: h.score for h in bad}["a"] == 0.0  # non-finite counts as the minimum


@given(_scored, _scored, st.floats(0, 5), st.floats(0, 5))
def test_zscore_fusion_properties(
    dense: list[tuple[str, float]], lexical: list[tuple[str, float]], wd: float, wl: float
) -> None:
    fused = score_fusion(
        {"dense": dense, "lexical": lexical}, weights={"dense": wd, "lexical": wl}, norm="zscore"
    )
    keys = [h.key for h in fused]
    assert sorted(keys) == sorted({k for k, _ in dense} | {k for k, _ in lexical})
    scores = [h.score for h in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(s >= 0.0 for s in scores)
    # within one leg the order is the leg's own (a monotone map of its scores)
    only = score_fusion({"dense": dense}, norm="zscore")
    first: dict[str, float] = {}
    for k, v in dense:
        first.setdefault(k, v)
    got = [first[h.key] for h in only]
    span = max(map(abs, got), default=1.0)
    # non-increasing, up to scores that are equal once shifted by the list's minimum
    assert all(x >= y - 1e-9 * max(1.0, span) for x, y in itertools.pairwise(got))
