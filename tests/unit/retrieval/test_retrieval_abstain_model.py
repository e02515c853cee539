"""The multi-signal abstention model: features, the logistic decision, the wiring."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.retrieval.abstain import AbstainPolicy, Evidence, assess
from ragline.retrieval.abstain_model import FEATURES, FITTED, WINDOW, AbstainModel, features


def ev(
    sim: float | None,
    bm25: float | None = None,
    d: int | None = None,
    b: int | None = None,
    text: str = "x",
) -> Evidence:
    return Evidence(
        text=text, similarity=sim, rerank=None, bm25_score=bm25, dense_rank=d, bm25_rank=b
    )


def test_features_by_hand() -> None:
    rows = [ev(0.6, 4.0, 1, 1), ev(0.5, 2.0, 2, 5), ev(0.4, None, 3, None), ev(0.1, 0.0, 40, 2)]
    x = features(rows)
    assert x is not None
    assert x["sim_max"] == 0.6 and x["sim_gap"] == pytest.approx(0.1)
    assert x["lex_peak"] == pytest.approx(4.0 / 3.0)  # zero BM25 scores do not count
    assert x["agree"] == pytest.approx(2 / WINDOW)  # both legs' top 10: the first two
    assert x["top_agree"] == 1.0


def test_features_only_look_at_the_window_and_need_a_similarity() -> None:
    head = [ev(0.3, 1.0, i, i) for i in range(1, WINDOW + 1)]
    tail = [ev(0.99, 99.0, 1, 1)]
    assert features(head + tail) == features(head)
    assert features([ev(None, 3.0, None, 1)]) is None  # lexical only: no model
    assert features([]) is None
    nan = features([ev(float("nan")), ev(0.2, float("inf"), 1, 1)])
    assert nan is not None and nan["sim_max"] == 0.2 and nan["lex_peak"] == 0.0


def _model(threshold: float = 0.5) -> AbstainModel:
    n = len(FEATURES)
    return AbstainModel(
        mean=(0.0,) * n,
        scale=(1.0,) * n,
        weights=(-10.0,) + (0.0,) * (n - 1),
        bias=4.0,
        threshold=threshold,
    )


def test_model_validates_its_numbers() -> None:
    with pytest.raises(ValueError):
        AbstainModel(mean=(0.0,), scale=(1.0,), weights=(1.0,), bias=0.0, threshold=0.5)
    n = len(FEATURES)
    with pytest.raises(ValueError):
        AbstainModel(mean=(0.0,) * n, scale=(0.0,) * n, weights=(1.0,) * n, bias=0, threshold=0.5)
    with pytest.raises(ValueError):
        AbstainModel(mean=(0.0,) * n, scale=(1.0,) * n, weights=(1.0,) * n, bias=0, threshold=1.0)
    FITTED.probability(dict.fromkeys(FEATURES, 0.0))  # the shipped model is well-formed


@given(
    st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=len(FEATURES), max_size=len(FEATURES))
)
def test_probability_is_a_probability(values: list[float]) -> None:
    p = FITTED.probability(dict(zip(FEATURES, values, strict=True)))
    assert 0.0 <= p <= 1.0 and not math.isnan(p)


def test_the_model_decides_hybrid_searches_only() -> None:
    pol = AbstainPolicy(min_similarity=0.3, model=_model())
    weak = assess([ev(0.2, 1.0, 1, 1), ev(0.1, 0.5, 2, 2)], ["q"], pol)
    assert (weak.reason, weak.signal, weak.threshold) == ("low_evidence", "model", 0.5)
    strong = assess([ev(0.9, 1.0, 1, 1)], ["q"], pol)
    assert (strong.reason, strong.signal) == (None, "model")
    # dense only (no BM25 rank anywhere): the similarity threshold, as before
    dense = assess([ev(0.2, None, 1, None)], ["q"], pol)
    assert (dense.reason, dense.signal) == ("below_similarity_threshold", "similarity")
    # without a model nothing changes
    plain = assess([ev(0.2, 1.0, 1, 1)], ["q"], AbstainPolicy(min_similarity=0.3))
    assert plain.signal == "similarity"
    # the earlier rules still come first
    assert assess([], ["q"], pol).signal == "no_results"
    code = assess([ev(0.05, 1.0, 1, 1, text="see ERR-4711")], ["what is ERR-4711"], pol)
    assert (code.reason, code.signal) == (None, "identifier")
