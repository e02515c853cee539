"""The abstention sweep: what another similarity threshold would have done, replayed from
the evidence strengths one run recorded (no re-query).

Replay rule: only a decision the similarity threshold made moves (the response's
``evidence.signal == "similarity"``): the case abstains at threshold ``t`` iff its best
dense cosine is below ``t``, exactly the service's rule. Every other decision stays as
recorded (no results, an exact identifier match, a rerank threshold, lexical search
without a calibrated score), because another similarity threshold would not change it.

Cost on answerable cases (cases with required evidence): ``false_abstain_rate`` is the
share that would abstain; ``recall_lost`` the drop in their mean recall@10 against the
run (a case the run answered and ``t`` silences loses the recall it had).
``recall_unknown`` counts answerable cases the run abstained on and ``t`` would answer:
they returned nothing, so what they would have found is not known.

The suggested threshold (``best``) has the highest abstention F1 among the thresholds that
wrongly abstain on at most ``max_added_false_abstain_rate`` of the answerable cases *more*
than the configured threshold does (default 0: not one more; absolute when the configured
threshold is unknown); ties go to the threshold closest to the configured one (the
smallest change).
``best_range`` is the run of neighbouring thresholds scoring as well (the margin);
``best_unconstrained`` is the same choice at any cost to answerable cases.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ragline.evaluation.metrics import abstention_scores
from ragline.evaluation.summary import CaseResult

__all__ = [
    "RECALL_METRIC",
    "THRESHOLDS",
    "AbstentionSweep",
    "Strength",
    "SweepPoint",
    "f1",
    "strengths",
    "sweep",
    "sweep_mode",
]

THRESHOLDS: tuple[float, ...] = tuple(round(0.20 + 0.025 * i, 3) for i in range(17))
RECALL_METRIC = "recall@10"
_EPS = 1e-9


@dataclass(frozen=True, kw_only=True)
class Strength:
    """One case in one mode, as much as replaying the rule needs."""

    case_id: str
    expect_abstain: bool | None
    answerable: bool
    abstained: bool
    sweepable: bool
    best_similarity: float | None
    recall: float | None = None

    def abstains_at(self, threshold: float) -> bool:
        if self.sweepable and self.best_similarity is not None:
            return self.best_similarity < threshold
        return self.abstained


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SweepPoint(_Model):
    threshold: float
    abstention_precision: float | None
    abstention_recall: float | None
    abstention_f1: float | None
    abstained: int
    false_abstains: int
    false_abstain_rate: float | None
    recall_lost: float | None
    recall_unknown: int


class AbstentionSweep(_Model):
    n_cases: int
    n_expectation: int
    n_answerable: int
    n_sweepable: int
    configured: float | None
    max_added_false_abstain_rate: float
    best: float | None
    best_range: tuple[float, float] | None
    best_unconstrained: float | None
    points: list[SweepPoint]

    def point(self, threshold: float | None) -> SweepPoint | None:
        if threshold is None:
            return None
        return next((p for p in self.points if abs(p.threshold - threshold) < _EPS), None)


def f1(precision: float | None, recall: float | None) -> float | None:
    """``None`` when no case expected an abstention; never abstaining scores 0."""
    if recall is None:
        return None
    if precision is None or precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def strengths(results: Iterable[CaseResult]) -> list[Strength]:
    """The replayable part of a mode's scored cases (errored cases left out)."""
    out: list[Strength] = []
    for r in results:
        if r.error is not None:
            continue
        recall = r.metrics.get(RECALL_METRIC)
        signal = r.abstain_signal
        if signal is None:  # a service without ``evidence``: only answers carry a score
            legacy = r.abstain_reason in (None, "below_similarity_threshold")
            signal = "similarity" if legacy and r.best_similarity is not None else None
        out.append(
            Strength(
                case_id=r.case_id,
                expect_abstain=r.expect_abstain,
                answerable=recall is not None,
                abstained=r.abstained,
                sweepable=signal == "similarity",
                best_similarity=r.best_similarity,
                recall=recall,
            )
        )
    return out


def _point(cases: Sequence[Strength], t: float) -> SweepPoint:
    decided = [(c, c.abstains_at(t)) for c in cases]
    precision, recall = abstention_scores((c.expect_abstain, a) for c, a in decided)
    answerable = [(c, a) for c, a in decided if c.answerable]
    false = [c for c, a in answerable if a]
    lost = sum(c.recall or 0.0 for c in false if not c.abstained)
    return SweepPoint(
        threshold=t,
        abstention_precision=precision,
        abstention_recall=recall,
        abstention_f1=f1(precision, recall),
        abstained=sum(a for _, a in decided),
        false_abstains=len(false),
        false_abstain_rate=len(false) / len(answerable) if answerable else None,
        recall_lost=lost / len(answerable) if answerable else None,
        recall_unknown=sum(1 for c, a in answerable if c.abstained and not a),
    )


def _configured(thresholds: Iterable[float | None]) -> float | None:
    seen = Counter(t for t in thresholds if t is not None)
    return seen.most_common(1)[0][0] if seen else None


def _best(
    points: Sequence[SweepPoint], configured: float | None, budget: float
) -> tuple[float | None, tuple[float, float] | None]:
    base = next(
        (p for p in points if configured is not None and abs(p.threshold - configured) < _EPS),
        None,
    )
    allowed = budget + ((base.false_abstain_rate or 0.0) if base is not None else 0.0)
    ok = [
        p
        for p in points
        if p.abstention_f1 is not None and (p.false_abstain_rate or 0.0) <= allowed + _EPS
    ]
    if not ok:
        return None, None
    top = max(p.abstention_f1 or 0.0 for p in ok)
    tied = [p for p in ok if (p.abstention_f1 or 0.0) >= top - _EPS]
    anchor = configured if configured is not None else tied[0].threshold
    best = min(tied, key=lambda p: (abs(p.threshold - anchor), p.threshold)).threshold
    # the run of neighbouring thresholds that score as well: the margin around ``best``
    good = {p.threshold for p in tied}
    grid = [p.threshold for p in points]
    i = grid.index(best)
    lo = hi = i
    while lo > 0 and grid[lo - 1] in good:
        lo -= 1
    while hi < len(grid) - 1 and grid[hi + 1] in good:
        hi += 1
    return best, (grid[lo], grid[hi])


def sweep(
    cases: Sequence[Strength],
    *,
    configured: float | None = None,
    thresholds: Sequence[float] = THRESHOLDS,
    max_added_false_abstain_rate: float = 0.0,
) -> AbstentionSweep:
    extra = [configured] if configured is not None else []
    grid = sorted({round(t, 6) for t in (*thresholds, *extra)})
    points = [_point(cases, t) for t in grid]
    best, best_range = _best(points, configured, max_added_false_abstain_rate)
    any_cost, _ = _best(points, configured, 1.0)
    return AbstentionSweep(
        n_cases=len(cases),
        n_expectation=sum(c.expect_abstain is not None for c in cases),
        n_answerable=sum(c.answerable for c in cases),
        n_sweepable=sum(c.sweepable and c.best_similarity is not None for c in cases),
        configured=configured,
        max_added_false_abstain_rate=max_added_false_abstain_rate,
        best=best,
        best_range=best_range,
        best_unconstrained=any_cost,
        points=points,
    )


def sweep_mode(
    results: Sequence[CaseResult], *, max_added_false_abstain_rate: float = 0.0
) -> AbstentionSweep:
    """The sweep of one mode's scored cases; the configured threshold is the one the
    service reported for its similarity decisions."""
    return sweep(
        strengths(results),
        configured=_configured(
            r.abstain_threshold for r in results if r.abstain_signal == "similarity"
        ),
        max_added_false_abstain_rate=max_added_false_abstain_rate,
    )
