"""From raw query outcomes to scored cases and per-mode / per-category metric tables.

What a run keeps is ids, ranks and numbers, never the evidence text: reports are CI
artifacts and must not become a copy of the company's documents.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from ragline.evaluation.datasets import EvalCase, EvalDataset
from ragline.evaluation.metrics import (
    RECALL_KS,
    Hit,
    abstention_scores,
    judge,
    latency_summary,
    mean,
    ndcg_at_k,
    percentile,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

__all__ = [
    "CASE_METRICS",
    "LOWER_IS_BETTER",
    "CaseResult",
    "CaseRun",
    "lower_is_better",
    "score_case",
    "summarize_mode",
]

PRECISION_KS: tuple[int, ...] = (1, 5, 10)
CASE_METRICS: tuple[str, ...] = (
    *(f"recall@{k}" for k in RECALL_KS),
    *(f"precision@{k}" for k in PRECISION_KS),
    "mrr",
    "ndcg@10",
)
# metrics where a smaller value is the better one (for baseline comparison); every
# timing too (``*_ms``: the server's per-stage ``server_<stage>_p50_ms`` as well), see
# ``lower_is_better``
LOWER_IS_BETTER: frozenset[str] = frozenset(
    {
        "forbidden_hit_rate",
        "forbidden_hits",
        "unflagged_injection_hits",
        "error_rate",
        "latency_p50_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "latency_mean_ms",
    }
)


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of ``metric`` is the better one (counts of leaks and
    errors, and every timing)."""
    return metric in LOWER_IS_BETTER or metric.endswith("_ms")


@dataclass(frozen=True, kw_only=True)
class CaseRun:
    """What the query service answered for one case in one mode."""

    case_id: str
    mode: str
    hits: Sequence[Hit] = ()
    abstained: bool = False
    abstain_reason: str | None = None
    # the evidence strength the abstention rule saw (``evidence`` of the response)
    abstain_signal: str | None = None
    best_similarity: float | None = None
    abstain_threshold: float | None = None
    latency_ms: float | None = None
    server_ms: float | None = None
    cache: str | None = None
    rerank_applied: bool | None = None
    trace_id: str | None = None
    error: str | None = None
    degraded: Sequence[str] = ()
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    answerable_probability: float | None = None
    features: Mapping[str, float | None] | None = None


class CaseResult(BaseModel):
    """One case in one mode, as stored in the report (ids and numbers only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    mode: str
    category: str
    difficulty: str
    metrics: dict[str, float | None]
    expect_abstain: bool | None
    abstained: bool
    abstain_reason: str | None = None
    forbidden_documents: list[str]
    unflagged_documents: list[str]
    top_documents: list[str]
    first_relevant_rank: int | None
    latency_ms: float | None
    server_ms: float | None
    cache: str | None
    rerank_applied: bool | None
    trace_id: str | None
    error: str | None
    degraded: list[str] = []
    timings_ms: dict[str, float] = {}
    # evidence strength (reports written before these existed load with None)
    abstain_signal: str | None = None
    best_similarity: float | None = None
    abstain_threshold: float | None = None
    # the answerability model's probability and inputs (hybrid; older reports: None)
    answerable_probability: float | None = None
    features: dict[str, float | None] | None = None


def score_case(case: EvalCase, run: CaseRun, *, doc_level: bool) -> CaseResult:
    # an abstention shows the user nothing: relevance is judged on an empty list, but
    # anything it still returned is checked for forbidden content
    shown: Sequence[Hit] = () if run.abstained else run.hits
    j = judge(case, shown, doc_level=doc_level)
    returned = judge(case, run.hits, doc_level=False)
    metrics: dict[str, float | None] = {}
    for k in RECALL_KS:
        metrics[f"recall@{k}"] = recall_at_k(j, k)
    for k in PRECISION_KS:
        metrics[f"precision@{k}"] = precision_at_k(j, k)
    metrics["mrr"] = reciprocal_rank(j)
    metrics["ndcg@10"] = ndcg_at_k(j, 10)
    first = next((i + 1 for i, rel in enumerate(j.relevant) if rel), None)
    top: list[str] = []
    for h in run.hits:
        if h.document_id not in top:
            top.append(h.document_id)
    return CaseResult(
        case_id=case.case_id,
        mode=run.mode,
        category=case.category,
        difficulty=case.difficulty,
        metrics=metrics,
        expect_abstain=case.expect_abstain,
        abstained=run.abstained,
        abstain_reason=run.abstain_reason,
        forbidden_documents=sorted(
            {h.document_id for h, bad in zip(run.hits, returned.forbidden, strict=True) if bad}
        ),
        unflagged_documents=sorted(
            {h.document_id for h, bad in zip(run.hits, returned.unflagged, strict=True) if bad}
        ),
        top_documents=top[:10],
        first_relevant_rank=first,
        latency_ms=run.latency_ms,
        server_ms=run.server_ms,
        cache=run.cache,
        rerank_applied=run.rerank_applied,
        trace_id=run.trace_id,
        error=run.error,
        degraded=list(run.degraded),
        timings_ms=dict(run.timings_ms),
        abstain_signal=run.abstain_signal,
        best_similarity=run.best_similarity,
        abstain_threshold=run.abstain_threshold,
        answerable_probability=run.answerable_probability,
        features=dict(run.features) if run.features is not None else None,
    )


def _rate(flags: Iterable[bool]) -> float | None:
    vals = list(flags)
    return sum(vals) / len(vals) if vals else None


def _aggregate(
    results: Sequence[CaseResult], cases: Mapping[str, EvalCase]
) -> dict[str, float | None]:
    out: dict[str, float | None] = {"n_cases": float(len(results))}
    for name in CASE_METRICS:
        out[name] = mean(r.metrics.get(name) for r in results)
    ok = [r for r in results if r.error is None]
    out["abstention_precision"], out["abstention_recall"] = abstention_scores(
        (r.expect_abstain, r.abstained) for r in ok
    )
    guarded = [r for r in results if cases[r.case_id].forbidden]
    out["forbidden_hit_rate"] = _rate(bool(r.forbidden_documents) for r in guarded)
    out["forbidden_hits"] = float(sum(len(r.forbidden_documents) for r in results))
    out["unflagged_injection_hits"] = float(sum(len(r.unflagged_documents) for r in results))
    out["error_rate"] = _rate(r.error is not None for r in results)
    out["degraded_rate"] = _rate(bool(r.degraded) for r in ok)
    out["cache_hit_rate"] = _rate(r.cache == "hit" for r in ok if r.cache is not None)
    out["rerank_applied_rate"] = _rate(
        bool(r.rerank_applied) for r in ok if r.rerank_applied is not None
    )
    out.update(latency_summary([r.latency_ms for r in ok if r.latency_ms is not None]))
    server = [r.server_ms for r in ok if r.server_ms is not None]
    out["server_p50_ms"] = percentile(server, 50)
    # the service's own per-stage timings: where the time goes, per mode
    stages = sorted({k for r in ok for k in r.timings_ms if k != "total"})
    for stage in stages:
        vals = [r.timings_ms[stage] for r in ok if stage in r.timings_ms]
        out[f"server_{stage}_p50_ms"] = percentile(vals, 50)
    return out


@dataclass(frozen=True, kw_only=True)
class ModeSummary:
    overall: dict[str, float | None]
    by_category: dict[str, dict[str, float | None]]
    cases: list[CaseResult]


def summarize_mode(dataset: EvalDataset, runs: Sequence[CaseRun]) -> ModeSummary:
    """Score every run of one mode and aggregate overall and per category."""
    cases = {c.case_id: c for c in dataset.cases}
    results = [score_case(cases[r.case_id], r, doc_level=dataset.doc_level) for r in runs]
    per_cat: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        per_cat[r.category].append(r)
    return ModeSummary(
        overall=_aggregate(results, cases),
        by_category={cat: _aggregate(rs, cases) for cat, rs in sorted(per_cat.items())},
        cases=results,
    )
