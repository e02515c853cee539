"""Fusion of the dense and BM25 lists: Reciprocal Rank Fusion or normalised scores.

``rrf``: ``score(d) = sum_i w_i / (k + rank_i(d))`` with 1-based ranks. It needs no
score calibration, but it ignores how far apart the scores are: on a small corpus the
BM25 list reaches every chunk sharing one word, and a chunk that is in both lists at
weak ranks (dense 40, BM25 8) outscores one that dense ranks 2nd with almost the top
cosine but BM25 misses (golden pp-05, docs/evaluation.md "Fusion").

``score_fusion``: each list's scores normalised over that list, then
``score(d) = sum_i w_i * norm_i(d)`` (absent = 0, the list's weakest). ``norm="minmax"``
maps the list to [0, 1]; ``norm="zscore"`` measures each score from the list's minimum
in standard deviations of the list (the same order as classic z-scores with an absent
hit at the list's lowest z), so a leg whose top stands out from its own list weighs more
than one whose list is flat. A strong hit of one retriever keeps its strength; a weak
hit found by both stays weak.

Evidence weighting (issue 37): a BM25 list always has a top hit, also when the query
shares no real word with its answer, and z-scoring makes that noise look as confident as
a real match. ``lexical_evidence`` measures a BM25 score in units of the most one
matched term can add on this index (the idf of a term found in a single chunk, which
grows with the log of the chunk count, so the unit carries over between corpora), and
``evidence_weight`` maps it to a weight in [0, 1]: 0 below ``none``, 1 from ``full``,
linear between. ``score_fusion(..., hit_weights=...)`` scales each hit's normalised score
by the weight of its own raw score: with no evidence anywhere the lexical leg adds
nothing (pure dense order), with full evidence on every hit it is the unweighted fusion.

Agreement weighting (issue 37, the length-preserving paraphrase set): ``cosine_weight``
weighs a BM25 hit by the query's cosine to it (what hydration reads for every candidate)
measured from the dense leg's best cosine: within ``gap`` of it the hit counts in full,
``gap + ramp`` or further below it adds nothing, linear between; a hit the meaning model
finds off-topic is the lexical leg's noise. ``score_fusion(..., key_weights=...)`` applies
such per-hit factors by id.
Coverage weighting (issue 37): the share of the query's IDF (over the words the caller's
corpus holds) that the best BM25 hit holds. A claim's best hit holds most of its rare
words; a question that shares no word with its answer gets a best hit holding one or two
of its words, whatever their scores. ``coverage_weight`` ramps it into one weight for
every BM25 hit of the query (the larger of it and the hit's evidence weight when both
are on: candidates.fuse).

Ties break by the best single rank, then by id, so the order is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "NORMS",
    "FusedHit",
    "Norm",
    "cosine_weight",
    "coverage_weight",
    "evidence_weight",
    "idf_one",
    "lexical_evidence",
    "rrf",
    "score_fusion",
]


@dataclass(frozen=True, kw_only=True)
class FusedHit:
    key: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # retriever -> 1-based rank


def _ordered(
    scores: dict[str, float],
    ranks: dict[str, dict[str, int]],
    lead: Mapping[str, int] | None = None,
) -> list[FusedHit]:
    """Best score first; ties by the best rank in a list that weighed in (``lead``: a hit
    a zero-weight list alone found sorts after every weighed hit), then any rank, then id."""
    far = 1 << 30

    def order(key: str) -> tuple[float, int, int, str]:
        best = min(ranks[key].values())
        return (-scores[key], best if lead is None else lead.get(key, far), best, key)

    keys = sorted(scores, key=order)
    return [FusedHit(key=key, score=scores[key], ranks=ranks[key]) for key in keys]


def rrf(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Fuse ranked id lists (best first). A duplicate id inside one list keeps its best rank."""
    if k < 1:
        raise ValueError("k must be >= 1")
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in rankings.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        seen: set[str] = set()
        for pos, key in enumerate(ids, start=1):
            if key in seen:
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + w / (k + pos)
            ranks.setdefault(key, {})[name] = pos
    return _ordered(scores, ranks)


def _minmax(values: Sequence[float]) -> list[float]:
    """[0, 1] over the list; a list of equal scores (or of one) is all 1.0. A non-finite
    score counts as the list's minimum."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return [1.0] * len(values)
    lo, hi = min(finite), max(finite)
    if hi - lo <= 1e-12:
        return [1.0] * len(values)
    return [(v - lo) / (hi - lo) if math.isfinite(v) else 0.0 for v in values]


def _zscore(values: Sequence[float]) -> list[float]:
    """Distance from the list's minimum in standard deviations of the list; a list of
    equal scores (or of one) is all 1.0. A non-finite score counts as the minimum."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return [1.0] * len(values)
    lo = min(finite)
    mean = sum(finite) / len(finite)
    std = math.sqrt(sum((v - mean) ** 2 for v in finite) / len(finite))
    if std <= 1e-12:
        return [1.0] * len(values)
    return [(v - lo) / std if math.isfinite(v) else 0.0 for v in values]


Norm = Literal["minmax", "zscore"]
_NORMS: dict[str, Callable[[Sequence[float]], list[float]]] = {
    "minmax": _minmax,
    "zscore": _zscore,
}
NORMS: tuple[str, ...] = tuple(_NORMS)


def idf_one(chunks: int) -> float:
    """Lucene's BM25 idf of a term found in one of ``chunks`` chunks: the most one matched
    term can add to a BM25 score (its term-frequency factor is below 1)."""
    return math.log(1.0 + (max(chunks, 1) - 0.5) / 1.5)


def lexical_evidence(score: float, chunks: int) -> float:
    """A BM25 score in units of ``idf_one(chunks)``: roughly how many rare words matched."""
    unit = idf_one(chunks)
    return score / unit if unit > 0 and math.isfinite(score) else 0.0


def evidence_weight(evidence: float, *, none: float, full: float) -> float:
    """0 at or below ``none``, 1 at or above ``full``, linear between (monotone)."""
    if full < none:
        raise ValueError("full must be >= none")
    if math.isnan(evidence):
        return 0.0
    if evidence >= full:
        return 1.0
    if evidence <= none:
        return 0.0
    return (evidence - none) / (full - none)


def cosine_weight(similarity: float | None, best: float, *, gap: float, ramp: float) -> float:
    """1 when ``similarity`` is at most ``gap`` below ``best``, 0 from ``gap + ramp``
    below, linear between (monotone in ``similarity``); an unknown similarity weighs 1."""
    if similarity is None or not math.isfinite(similarity):
        return 1.0
    below = best - similarity
    if below <= gap:
        return 1.0
    if ramp <= 0 or below >= gap + ramp:
        return 0.0
    return 1.0 - (below - gap) / ramp


def coverage_weight(coverage: float | None, *, none: float, full: float) -> float:
    """The lexical leg's weight for one query by its best hit's ``coverage`` of the query
    (the IDF share of the query's words it holds): ``evidence_weight``'s ramp over it; an
    unknown coverage (no statistics) weighs 1, as without the rule."""
    if coverage is None or not math.isfinite(coverage):
        return 1.0
    return evidence_weight(coverage, none=none, full=full)


def score_fusion(
    scored: Mapping[str, Sequence[tuple[str, float]]],
    *,
    weights: Mapping[str, float] | None = None,
    norm: Norm = "minmax",
    hit_weights: Mapping[str, Callable[[float], float]] | None = None,
    key_weights: Mapping[str, Mapping[str, float]] | None = None,
) -> list[FusedHit]:
    """Fuse ``(id, score)`` lists (best first, higher score = better) by a weighted sum of
    normalised scores (module docstring). ``hit_weights[name]`` maps a hit's raw score to
    a factor on its normalised score (evidence weighting), ``key_weights[name][id]`` is a
    further factor by id (agreement weighting; absent = 1); a hit whose factor is 0 adds
    nothing but keeps its rank. A duplicate id inside one list keeps its first entry."""
    normalise = _NORMS[norm]
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    lead: dict[str, int] = {}
    for name, items in scored.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        per_hit = None if hit_weights is None else hit_weights.get(name)
        by_key = None if key_weights is None else key_weights.get(name)
        first: dict[str, float] = {}
        for key, s in items:
            first.setdefault(key, float(s))
        normed = normalise(list(first.values()))
        for pos, (key, raw, value) in enumerate(
            zip(first, first.values(), normed, strict=True), start=1
        ):
            factor = 1.0 if per_hit is None else per_hit(raw)
            if by_key is not None:
                factor *= by_key.get(key, 1.0)
            scores[key] = scores.get(key, 0.0) + w * factor * value
            ranks.setdefault(key, {})[name] = pos
            if w * factor > 0:
                lead[key] = min(lead.get(key, pos), pos)
    return _ordered(scores, ranks, lead)
