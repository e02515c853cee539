"""Retrieval metrics: judging a ranked list against a case, then Recall@k, Precision@k,
MRR, nDCG@10, abstention precision/recall, forbidden-hit rate and latency percentiles.

Conventions (those of trec_eval / pytrec_eval, which BEIR uses):
- a *group* is one required piece of evidence (any of its alternatives will do);
- Recall@k = groups matched by any of the top k hits / all groups (one chunk holding two
  needed facts covers both);
- for nDCG a hit is credited with at most one group, the first it matches that no earlier
  hit was credited with, so five chunks of one document are one find, not five;
- Precision@k = relevant hits in the top k / k (a short list is not rewarded);
- MRR = 1 / rank of the first relevant hit over the whole returned list;
- nDCG@k uses linear gains (the group's grade) and log2(rank + 1) discounts; the ideal
  list puts the highest grades first;
- a case with no required evidence (an expected abstention) has no retrieval metrics
  (``None``) and is left out of the means, like BEIR queries without judgments.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragline.evaluation.datasets import EvalCase

__all__ = [
    "RECALL_KS",
    "Hit",
    "Judgement",
    "abstention_scores",
    "judge",
    "latency_summary",
    "mean",
    "ndcg_at_k",
    "percentile",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
]

RECALL_KS: tuple[int, ...] = (1, 5, 10, 100)


@dataclass(frozen=True, kw_only=True)
class Hit:
    """One returned evidence item, as much as judging needs."""

    document_id: str
    text: str
    chunk_id: str = ""
    flags: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """Per rank (0-based): the groups the hit matches, the one group it is credited with
    (the first it matches that no earlier hit was credited with), and whether it is
    forbidden or an injection-bearing chunk returned without its flag."""

    grades: tuple[int, ...]
    matched: tuple[frozenset[int], ...]
    new_group: tuple[int | None, ...]
    forbidden: tuple[bool, ...]
    unflagged: tuple[bool, ...]

    @property
    def relevant(self) -> tuple[bool, ...]:
        return tuple(bool(m) for m in self.matched)

    @property
    def n_groups(self) -> int:
        return len(self.grades)

    @property
    def forbidden_hits(self) -> int:
        return sum(self.forbidden)

    @property
    def unflagged_hits(self) -> int:
        return sum(self.unflagged)


def collapse_documents(hits: Sequence[Hit]) -> list[Hit]:
    """The first hit of each document, in rank order (document-level judging)."""
    seen: set[str] = set()
    out: list[Hit] = []
    for h in hits:
        if h.document_id not in seen:
            seen.add(h.document_id)
            out.append(h)
    return out


def judge(case: EvalCase, hits: Sequence[Hit], *, doc_level: bool = False) -> Judgement:
    ranked = collapse_documents(hits) if doc_level else list(hits)
    credited: set[int] = set()
    matched: list[frozenset[int]] = []
    new_group: list[int | None] = []
    for h in ranked:
        groups = frozenset(
            i
            for i, g in enumerate(case.required)
            if any(m.matches(h.document_id, h.text) for m in g.any_of)
        )
        matched.append(groups)
        fresh = min((i for i in groups if i not in credited), default=None)
        if fresh is not None:
            credited.add(fresh)
        new_group.append(fresh)
    forbidden = tuple(any(m.matches(h.document_id, h.text) for m in case.forbidden) for h in hits)
    unflagged = tuple(
        any(m.matches(h.document_id, h.text) for m in case.flag_required)
        and not bool(h.flags.get("injection_suspect", False))
        for h in hits
    )
    return Judgement(
        grades=tuple(g.grade for g in case.required),
        matched=tuple(matched),
        new_group=tuple(new_group),
        forbidden=forbidden,
        unflagged=unflagged,
    )


def recall_at_k(j: Judgement, k: int) -> float | None:
    if j.n_groups == 0:
        return None
    found: set[int] = set().union(*j.matched[:k])
    return len(found) / j.n_groups


def precision_at_k(j: Judgement, k: int) -> float | None:
    if j.n_groups == 0:
        return None
    return sum(j.relevant[:k]) / k


def reciprocal_rank(j: Judgement) -> float | None:
    if j.n_groups == 0:
        return None
    for rank, rel in enumerate(j.relevant, 1):
        if rel:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(j: Judgement, k: int = 10) -> float | None:
    if j.n_groups == 0:
        return None
    dcg = sum(
        j.grades[g] / math.log2(rank + 2) for rank, g in enumerate(j.new_group[:k]) if g is not None
    )
    ideal = sorted(j.grades, reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    return dcg / idcg


def abstention_scores(
    pairs: Iterable[tuple[bool | None, bool]],
) -> tuple[float | None, float | None]:
    """(precision, recall) of abstaining, from ``(expected, abstained)`` per case; cases
    whose expectation is ``None`` (safety-only cases) do not count.

    Precision is ``None`` when the system never abstained, recall when no case expected
    it: an undefined ratio is reported as such rather than as 0 or 1.
    """
    tp = fp = fn = 0
    for expected, abstained in pairs:
        if expected is None:
            continue
        tp += expected and abstained
        fp += (not expected) and abstained
        fn += expected and not abstained
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return precision, recall


def mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def latency_summary(values_ms: Sequence[float]) -> dict[str, float | None]:
    return {
        "latency_p50_ms": percentile(values_ms, 50),
        "latency_p95_ms": percentile(values_ms, 95),
        "latency_p99_ms": percentile(values_ms, 99),
        "latency_mean_ms": mean(values_ms),
    }
