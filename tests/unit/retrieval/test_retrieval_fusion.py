"""RRF against a hand-computed example, plus properties."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.retrieval.fusion import (
    cosine_weight,
    coverage_weight,
    evidence_weight,
    idf_one,
    lexical_evidence,
    rrf,
    score_fusion,
)


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


# ---- evidence weighting (issue 37): each BM25 hit weighed by its own evidence


def test_idf_one_is_lucenes_idf_of_a_term_in_one_chunk() -> None:
    # Lucene BM25: idf = ln(1 + (N - n + 0.5) / (n + 0.5)) with n = 1
    assert idf_one(1000) == pytest.approx(math.log(1 + 999.5 / 1.5))
    assert lexical_evidence(2 * idf_one(1000), 1000) == pytest.approx(2.0)
    # the unit grows with the corpus: the same score is less evidence on a bigger index
    assert lexical_evidence(10.0, 100) > lexical_evidence(10.0, 1_000_000)


@given(st.floats(0, 5), st.floats(0, 5))
def test_evidence_weight_is_a_monotone_ramp(none: float, width: float) -> None:
    full = none + width
    xs = [none - 1 + (width + 2) * i / 64 for i in range(65)]  # across and beyond the ramp
    ws = [evidence_weight(x, none=none, full=full) for x in xs]
    assert all(0.0 <= w <= 1.0 for w in ws)
    assert ws == sorted(ws)  # more evidence never weighs less
    assert evidence_weight(none - 1e-6, none=none, full=full) == 0.0
    assert evidence_weight(full, none=none, full=full) == 1.0
    if width > 1e-6:
        assert evidence_weight(none + width / 4, none=none, full=full) == pytest.approx(0.25)


def test_evidence_weight_rejects_an_inverted_ramp() -> None:
    with pytest.raises(ValueError):
        evidence_weight(1.0, none=2.0, full=1.0)


_DENSE = [("d1", 0.61), ("d2", 0.58), ("d3", 0.52), ("x", 0.40), ("d5", 0.35)]
_LEXICAL = [("n1", 9.0), ("n2", 8.5), ("x", 8.0), ("d5", 7.0), ("n3", 6.0)]


def _with_factor(factor: float) -> list[str]:
    fused = score_fusion(
        {"dense": _DENSE, "lexical": _LEXICAL},
        norm="zscore",
        hit_weights={"lexical": lambda _score: factor},
    )
    return [h.key for h in fused]


def test_no_lexical_evidence_is_the_dense_order() -> None:
    """Weight 0 on every BM25 hit: the dense hits in the dense leg's order, then the
    hits only BM25 found (they keep their ranks for the response, add no score)."""
    keys = _with_factor(0.0)
    assert keys[: len(_DENSE)] == [k for k, _ in _DENSE]
    assert keys[len(_DENSE) :] == ["n1", "n2", "n3"]


def test_full_lexical_evidence_is_the_unweighted_fusion() -> None:
    plain = score_fusion({"dense": _DENSE, "lexical": _LEXICAL}, norm="zscore")
    full = score_fusion(
        {"dense": _DENSE, "lexical": _LEXICAL},
        norm="zscore",
        hit_weights={"lexical": lambda _score: 1.0},
    )
    assert [(h.key, h.score, h.ranks) for h in full] == [(h.key, h.score, h.ranks) for h in plain]
    assert _with_factor(1.0)[0] != "d1"  # here BM25's noise does move the order


def test_each_hit_is_weighed_by_its_own_score() -> None:
    """A paraphrase-like query: weak BM25 hits (below the ramp) add nothing, a strong one
    counts: hit weights are a function of the hit's raw score."""
    unit = idf_one(10_000)
    dense = [("answer", 0.50), ("b", 0.45), ("c", 0.40), ("d", 0.30)]
    weak = [("noise", 1.0 * unit), ("c", 0.9 * unit), ("d", 0.2 * unit)]

    def by_evidence(score: float) -> float:
        return evidence_weight(lexical_evidence(score, 10_000), none=1.2, full=2.0)

    fused = score_fusion(
        {"dense": dense, "lexical": weak}, norm="zscore", hit_weights={"lexical": by_evidence}
    )
    assert [h.key for h in fused][:4] == ["answer", "b", "c", "d"]
    strong = [("hit", 3.0 * unit), ("c", 0.9 * unit), ("d", 0.2 * unit)]
    fused = score_fusion(
        {"dense": dense, "lexical": strong}, norm="zscore", hit_weights={"lexical": by_evidence}
    )
    keys = [h.key for h in fused]
    assert keys.index("hit") < keys.index("b")  # the strong hit counts in full


@given(_scored, _scored, st.floats(0, 1), st.floats(0, 1))
def test_more_lexical_weight_never_lowers_a_lexical_hit(
    dense: list[tuple[str, float]], lexical: list[tuple[str, float]], lo: float, hi: float
) -> None:
    """Monotone in evidence: raising every BM25 hit's factor never lowers a fused score."""
    lo, hi = min(lo, hi), max(lo, hi)
    legs = {"dense": dense, "lexical": lexical}
    a = {
        h.key: h.score
        for h in score_fusion(legs, norm="zscore", hit_weights={"lexical": lambda _s: lo})
    }
    b = {
        h.key: h.score
        for h in score_fusion(legs, norm="zscore", hit_weights={"lexical": lambda _s: hi})
    }
    assert all(b[k] >= a[k] - 1e-9 for k in a)


def test_the_service_fusion_weighs_bm25_by_evidence() -> None:
    """``candidates.fuse`` with the ramp (1.2, 2.0): a BM25 list of weak hits (a
    paraphrase: no real word matched) leaves the dense order; strong hits, or an unknown
    chunk count, give the unweighted z-score fusion; so do the default settings (off)."""
    from ragline.retrieval.candidates import fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.lexical import LexicalHit
    from ragline.retrieval.settings import RankingSettings

    chunks = 50_000
    s = RankingSettings(  # evidence alone: no coverage floor
        lexical_evidence_none=1.2, lexical_evidence_ramp=0.8, lexical_coverage_ramp=0.0
    )
    unit = idf_one(chunks)
    dense = [DenseHit(chunk_id=k, similarity=v, rank=i) for i, (k, v) in enumerate(_DENSE, 1)]

    def lexical(scale: float) -> list[LexicalHit]:
        top = _LEXICAL[0][1]
        return [
            LexicalHit(chunk_id=k, score=v / top * scale * unit, rank=i)
            for i, (k, v) in enumerate(_LEXICAL, 1)
        ]

    weak = [h.key for h in fuse(dense, lexical(1.0), s, chunks=chunks)]
    assert weak[: len(_DENSE)] == [k for k, _ in _DENSE]
    plain = [h.key for h in fuse(dense, lexical(1.0), s)]  # chunk count unknown
    assert plain == _with_factor(1.0)
    strong = [h.key for h in fuse(dense, lexical(20.0), s, chunks=chunks)]
    assert strong == [h.key for h in fuse(dense, lexical(20.0), s)]
    off = RankingSettings()  # the default: every weighting off
    assert [h.key for h in fuse(dense, lexical(1.0), off, chunks=chunks)] == plain


def test_the_service_fusion_ramps_between_none_and_full() -> None:
    """Inside the ramp a BM25 hit counts in part, linearly in its evidence: at evidence
    e (units) it adds (e - 1.2) / 0.8 of its z-score. A step anywhere (at none, at full,
    at the middle) instead of the ramp fails this; the other service test does not see
    one (its hits are all below none or far above full)."""
    from ragline.retrieval.candidates import fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.lexical import LexicalHit
    from ragline.retrieval.settings import RankingSettings

    chunks = 50_000
    s = RankingSettings(  # evidence alone: no coverage floor
        lexical_evidence_none=1.2, lexical_evidence_ramp=0.8, lexical_coverage_ramp=0.0
    )
    unit = idf_one(chunks)
    evidence = {"n1": 2.4, "n2": 1.9, "x": 1.6, "d5": 1.3, "n3": 0.5}  # units, best first
    dense = [DenseHit(chunk_id=k, similarity=v, rank=i) for i, (k, v) in enumerate(_DENSE, 1)]
    lex = [
        LexicalHit(chunk_id=k, score=e * unit, rank=i)
        for i, (k, e) in enumerate(evidence.items(), 1)
    ]
    fused = {h.key: h.score for h in fuse(dense, lex, s, chunks=chunks)}
    dense_z = {h.key: h.score for h in score_fusion({"dense": _DENSE}, norm="zscore")}
    lex_z = {
        h.key: h.score
        for h in score_fusion({"lexical": [(h.chunk_id, h.score) for h in lex]}, norm="zscore")
    }
    for key, score in fused.items():
        w = min(1.0, max(0.0, (evidence.get(key, 0.0) - 1.2) / 0.8))
        assert score == pytest.approx(dense_z.get(key, 0.0) + w * lex_z.get(key, 0.0)), key
    assert 0 < (evidence["x"] - 1.2) / 0.8 < 1  # a hit inside the ramp is in the test


# ---- agreement weighting (issue 37, length-preserving paraphrases): each BM25 hit
# weighed by the query's cosine to it, measured from the dense leg's best


@given(st.floats(0, 0.3), st.floats(0, 0.3), st.floats(0.2, 0.9))
def test_cosine_weight_is_a_monotone_ramp_below_the_best(
    gap: float, width: float, best: float
) -> None:
    sims = [best - 0.8 + 0.9 * i / 90 for i in range(91)]  # far below the best to above it
    ws = [cosine_weight(x, best, gap=gap, ramp=width) for x in sims]
    assert all(0.0 <= w <= 1.0 for w in ws)
    assert ws == sorted(ws)  # a hit closer to the query never weighs less
    assert cosine_weight(best - gap + 1e-9, best, gap=gap, ramp=width) == 1.0
    assert cosine_weight(best - gap - width - 1e-6, best, gap=gap, ramp=width) == 0.0
    if width > 1e-6:
        mid = cosine_weight(best - gap - width / 4, best, gap=gap, ramp=width)
        assert mid == pytest.approx(0.75)
    assert cosine_weight(None, best, gap=gap, ramp=width) == 1.0  # unknown: unweighted


def test_the_service_fusion_weighs_bm25_by_agreement() -> None:
    """``candidates.fuse`` with the cosine ramp (gap 0.05, ramp 0.10): each BM25 hit adds
    its z-score times its weight by the query's cosine to it (1 within 0.05 of the dense
    leg's best, 0 from 0.15 below, linear between); off (the default, or no cosines) it
    is the unweighted fusion. A step instead of the ramp fails the middle hit."""
    from ragline.retrieval.candidates import fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.lexical import LexicalHit
    from ragline.retrieval.settings import RankingSettings

    s = RankingSettings(lexical_cosine_gap=0.05, lexical_cosine_ramp=0.10)
    dense = [DenseHit(chunk_id=k, similarity=v, rank=i) for i, (k, v) in enumerate(_DENSE, 1)]
    lex = [LexicalHit(chunk_id=k, score=v, rank=i) for i, (k, v) in enumerate(_LEXICAL, 1)]
    best = _DENSE[0][1]
    # n1 on-topic, n2 in the ramp (weight 0.5), n3 off-topic; x and d5 as dense has them
    cosines = {"n1": best - 0.02, "n2": best - 0.10, "n3": best - 0.40, "x": 0.40, "d5": 0.35}
    weight = {"n1": 1.0, "n2": 0.5, "n3": 0.0, "x": 0.0, "d5": 0.0}
    fused = {h.key: h.score for h in fuse(dense, lex, s, cosines=cosines)}
    dense_z = {h.key: h.score for h in score_fusion({"dense": _DENSE}, norm="zscore")}
    lex_z = {h.key: h.score for h in score_fusion({"lexical": _LEXICAL}, norm="zscore")}
    for key, score in fused.items():
        expected = (
            dense_z.get(key, 0.0) + weight[key] * lex_z.get(key, 0.0)
            if key in weight
            else dense_z[key]
        )
        assert score == pytest.approx(expected), key
    plain = [h.key for h in fuse(dense, lex, s)]  # no cosines: unweighted
    assert plain == _with_factor(1.0)
    off = [h.key for h in fuse(dense, lex, RankingSettings(), cosines=cosines)]
    assert off == plain
    assert list(fused)[: len(_DENSE)] != plain[: len(_DENSE)]  # the weighting moved the order


# ---- coverage weighting (issue 37): the IDF share of the query the best BM25 hit holds
# is a floor under every BM25 hit's evidence weight


@given(st.floats(0, 0.9), st.floats(0.01, 0.5))
def test_coverage_weight_is_a_monotone_ramp(none: float, width: float) -> None:
    covs = [i / 100 for i in range(101)]
    ws = [coverage_weight(c, none=none, full=none + width) for c in covs]
    assert all(0.0 <= w <= 1.0 for w in ws)
    assert ws == sorted(ws)  # a best hit holding more of the query never weighs less
    assert coverage_weight(none, none=none, full=none + width) == 0.0
    assert coverage_weight(none + width, none=none, full=none + width) == 1.0
    assert coverage_weight(none + width / 4, none=none, full=none + width) == pytest.approx(0.25)
    assert coverage_weight(None, none=none, full=none + width) == 1.0  # unknown: unweighted
    assert coverage_weight(math.nan, none=none, full=none + width) == 1.0


def test_top_coverage_present_leaves_out_words_the_corpus_lacks() -> None:
    """A word in no chunk counts neither way (in a small corpus plain words occur nowhere
    and get the highest IDF); the share is over the words the corpus has."""
    from ragline.retrieval.term_evidence import TermStats

    df = {"pcsk9": 7, "plasma": 400, "level": 1600, "decreas": 800}
    s = TermStats(chunks=12_000, df=df, top=frozenset({"pcsk9", "plasma"}))
    idf = {t: s.idf(t) for t in df}
    expected = (idf["pcsk9"] + idf["plasma"]) / sum(idf.values())
    assert s.top_coverage_present == pytest.approx(expected)
    assert s.top_coverage == pytest.approx(expected)  # every word present: the same share
    lacking = TermStats(chunks=12_000, df={**df, "zyx": 0}, top=s.top)
    assert lacking.top_coverage_present == pytest.approx(expected)
    assert lacking.top_coverage is not None and lacking.top_coverage < expected
    assert TermStats(chunks=10, df={"zyx": 0}, top=frozenset()).top_coverage_present is None


def _fuse_cov(coverage: float | None, *, evidence: dict[str, float], chunks: int | None) -> Any:
    from ragline.retrieval.candidates import fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.lexical import LexicalHit
    from ragline.retrieval.settings import RankingSettings

    s = RankingSettings(
        lexical_evidence_none=2.0,
        lexical_evidence_ramp=1.0,
        lexical_coverage_none=0.35,
        lexical_coverage_ramp=0.30,
    )
    unit = idf_one(chunks or 50_000)
    dense = [DenseHit(chunk_id=k, similarity=v, rank=i) for i, (k, v) in enumerate(_DENSE, 1)]
    lex = [
        LexicalHit(chunk_id=k, score=e * unit, rank=i)
        for i, (k, e) in enumerate(evidence.items(), 1)
    ]
    return {h.key: h.score for h in fuse(dense, lex, s, chunks=chunks, coverage=coverage)}, lex


def test_the_service_fusion_weighs_bm25_by_the_larger_of_evidence_and_coverage() -> None:
    """Each BM25 hit adds its z-score times max(its evidence weight (ramp 2.0 -> 3.0),
    the query's coverage weight (ramp 0.35 -> 0.65)). Coverage 0.5 is a floor of 0.5:
    weak hits count half, a strong one in full; coverage at or above 0.65 is the
    unweighted fusion, at or below 0.35 evidence alone decides; an unknown coverage
    (the lookup failed) is the unweighted fusion. Taking the smaller instead of the
    larger, ignoring the coverage, or a step instead of its ramp fails this."""
    chunks = 50_000
    evidence = {"n1": 3.5, "n2": 2.5, "x": 1.0, "d5": 0.8, "n3": 0.5}  # units, best first
    dense_z = {h.key: h.score for h in score_fusion({"dense": _DENSE}, norm="zscore")}

    def expected(cov: float | None, lex: Any) -> dict[str, float]:
        lex_z = {
            h.key: h.score
            for h in score_fusion({"lexical": [(h.chunk_id, h.score) for h in lex]}, norm="zscore")
        }
        floor = 1.0 if cov is None else min(1.0, max(0.0, (cov - 0.35) / 0.30))
        out = {}
        for key in set(dense_z) | set(lex_z):
            w = max(min(1.0, max(0.0, evidence.get(key, 0.0) - 2.0)), floor)
            out[key] = dense_z.get(key, 0.0) + w * lex_z.get(key, 0.0)
        return out

    for cov in (None, 0.1, 0.35, 0.5, 0.6, 0.65, 0.9):
        fused, lex = _fuse_cov(cov, evidence=evidence, chunks=chunks)
        want = expected(cov, lex)
        for key, score in fused.items():
            assert score == pytest.approx(want[key]), (cov, key)
    low, _ = _fuse_cov(0.1, evidence=evidence, chunks=chunks)
    high, _ = _fuse_cov(0.9, evidence=evidence, chunks=chunks)
    assert list(low)[: len(_DENSE)] != list(high)[: len(_DENSE)]  # coverage moves the order


def test_the_coverage_floor_applies_without_the_chunk_count() -> None:
    """With the chunk count unknown (no evidence weights) the coverage weight alone
    scales every BM25 hit: coverage at or below 0.35 is the dense order."""
    evidence = {"n1": 3.5, "n2": 2.5, "x": 1.0, "d5": 0.8, "n3": 0.5}
    low, _ = _fuse_cov(0.2, evidence=evidence, chunks=None)
    assert list(low)[: len(_DENSE)] == [k for k, _ in _DENSE]
    plain, _ = _fuse_cov(None, evidence=evidence, chunks=None)
    assert next(iter(plain)) != "d1"  # unweighted, BM25 moves the order


@given(
    _scored, _scored, st.floats(0, 1), st.floats(0, 1), st.one_of(st.none(), st.integers(1, 10**7))
)
def test_more_coverage_never_lowers_a_fused_score(
    dense: list[tuple[str, float]],
    lexical: list[tuple[str, float]],
    lo: float,
    hi: float,
    chunks: int | None,
) -> None:
    """Monotone in the evidence: a query whose best BM25 hit holds more of it never
    lowers any candidate's fused score (the fusion's side of issue 32's monotone
    probability)."""
    from ragline.retrieval.candidates import fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.lexical import LexicalHit
    from ragline.retrieval.settings import RankingSettings

    lo, hi = min(lo, hi), max(lo, hi)
    s = RankingSettings(lexical_coverage_none=0.35, lexical_coverage_ramp=0.30)
    d = [DenseHit(chunk_id=k, similarity=v, rank=i) for i, (k, v) in enumerate(dense, 1)]
    lx = [LexicalHit(chunk_id=k, score=v, rank=i) for i, (k, v) in enumerate(lexical, 1)]
    a = {h.key: h.score for h in fuse(d, lx, s, chunks=chunks, coverage=lo)}
    b = {h.key: h.score for h in fuse(d, lx, s, chunks=chunks, coverage=hi)}
    assert all(b[k] >= a[k] - 1e-9 for k in a)
