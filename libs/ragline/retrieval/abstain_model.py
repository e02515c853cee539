"""Abstention from several signals: a small logistic model over what retrieval computed.

One dense-cosine threshold cannot tell "the corpus has nothing on this" from "the
embedding model is weak on this wording" (golden pp-02: BM25 ranks the answer first,
cosine 0.29) nor from "a near-topic document that does not answer" (un-01: cosine 0.58).
The model weighs, over the first ``WINDOW`` fused results:

- ``sim_max``: the best cosine similarity (the old single signal);
- ``sim_gap``: best minus second-best cosine (one clear match vs. a flat field);
- ``lex_peak``: the best BM25 score over the mean BM25 score of the window, a per-query
  normalisation (raw BM25 is not comparable across queries or corpora);
- ``agree``: the share of the window both legs rank in their top ``WINDOW``;
- ``top_agree``: 1 when the first result is in both legs' top 3.

``p(abstain) = sigmoid(w . standardised(features) + b)``; the search abstains when ``p``
reaches ``threshold``. Coefficients, scaling and threshold are fitted by
``bench/tune_retrieval.py abstain-fit`` on a fixed train split (half of the golden set
by case-id hash, half of SciFact train) and reported on the other half; the fitted
numbers are pasted into ``FITTED`` below (docs/evaluation.md "Abstention from several
signals").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["FEATURES", "FITTED", "WINDOW", "AbstainModel", "Signals", "features"]

WINDOW = 10
FEATURES: tuple[str, ...] = ("sim_max", "sim_gap", "lex_peak", "agree", "top_agree")


class Signals(Protocol):
    """What one fused result carries (abstain.Evidence, or a hit of an eval response)."""

    @property
    def similarity(self) -> float | None: ...
    @property
    def bm25_score(self) -> float | None: ...
    @property
    def dense_rank(self) -> int | None: ...
    @property
    def bm25_rank(self) -> int | None: ...


def _finite(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def features(results: Sequence[Signals]) -> dict[str, float] | None:
    """The model's inputs over the first ``WINDOW`` results (fused order), or None when
    there is no dense similarity at all (lexical-only search: the model does not apply)."""
    window = list(results[:WINDOW])
    sims = sorted((s for r in window if (s := _finite(r.similarity)) is not None), reverse=True)
    if not sims:
        return None
    bm25 = [s for r in window if (s := _finite(r.bm25_score)) is not None and s > 0]
    both = [
        r
        for r in window
        if r.dense_rank is not None
        and r.bm25_rank is not None
        and r.dense_rank <= WINDOW
        and r.bm25_rank <= WINDOW
    ]
    first = window[0]
    return {
        "sim_max": sims[0],
        "sim_gap": sims[0] - sims[1] if len(sims) > 1 else 0.0,
        "lex_peak": max(bm25) / (sum(bm25) / len(bm25)) if bm25 else 0.0,
        "agree": len(both) / WINDOW,
        "top_agree": float(
            first.dense_rank is not None
            and first.bm25_rank is not None
            and first.dense_rank <= 3
            and first.bm25_rank <= 3
        ),
    }


@dataclass(frozen=True, kw_only=True)
class AbstainModel:
    """A fitted logistic model: weights over standardised ``FEATURES``."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def __post_init__(self) -> None:
        n = len(FEATURES)
        if not (len(self.mean) == len(self.scale) == len(self.weights) == n):
            raise ValueError(f"an abstain model needs {n} means, scales and weights")
        if any(s <= 0 for s in self.scale):
            raise ValueError("feature scales must be positive")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError("the threshold is a probability in (0, 1)")

    def probability(self, x: dict[str, float]) -> float:
        z = self.bias + sum(
            w * (x[f] - m) / s
            for f, m, s, w in zip(FEATURES, self.mean, self.scale, self.weights, strict=True)
        )
        z = max(-60.0, min(60.0, z))
        return 1.0 / (1.0 + math.exp(-z))

    def abstains(self, x: dict[str, float]) -> bool:
        return self.probability(x) >= self.threshold


# fitted by ``bench/tune_retrieval.py abstain-fit --l2 1`` (bench/out/tune/abstain.json): the
# golden set (tests/golden) and SciFact train, hybrid with score fusion; the threshold is
# the highest probability of an answerable SciFact train query plus a 0.05 margin.
# Measured (docs/evaluation.md "Abstention"): it does NOT beat the single similarity
# threshold under "no answerable SciFact query abstains", so it is off by default.
FITTED = AbstainModel(
    mean=(0.6302, 0.0438, 1.5656, 0.3532, 0.7297),
    scale=(0.1265, 0.0540, 0.4370, 0.2064, 0.4441),
    weights=(-1.8284, -0.3168, -0.7335, 0.6623, 0.0556),
    bias=-3.8846,
    threshold=0.7113,
)
