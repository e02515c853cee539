"""Baselines: the small summary report a run is measured against, and the before/after
table that shows a run next to it.

A baseline is a report without its per-case data (modes and categories only, a few KB),
so it can be committed (``bench/baselines/<dataset>.json``) and refreshed from an
accepted run (``ragline eval --save-baseline DIR``); ``load_report`` reads it like any
report. The gate (``gate.py``) decides pass or fail; the table is for reading: every
key metric before | after | delta, not only the changes the gate calls significant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from ragline.evaluation.gate import ThresholdConfig, compare
from ragline.evaluation.report import ModeReport, Report, fmt, grid, save_report

__all__ = [
    "BEFORE_AFTER_METRICS",
    "baseline_path",
    "dataset_slug",
    "render_before_after",
    "save_baseline",
    "slim_report",
]

BEFORE_AFTER_METRICS: tuple[str, ...] = (
    "ndcg@10",
    "recall@10",
    "recall@100",
    "mrr",
    "abstention_precision",
    "abstention_recall",
    "forbidden_hits",
    "latency_p50_ms",
    "latency_p95_ms",
)
_COUNTS = frozenset({"forbidden_hits", "unflagged_injection_hits", "n_cases"})
SLIM_NOTE = "baseline: summary only (modes and categories), per-case data dropped"


def dataset_slug(dataset: str) -> str:
    """A dataset name as a file or directory name (``golden:golden`` -> ``golden-golden``)."""
    return dataset.replace(":", "-").replace("/", "-")


def baseline_path(directory: Path, dataset: str) -> Path:
    """Where a dataset's baseline lives in a baselines directory."""
    return Path(directory) / f"{dataset_slug(dataset)}.json"


def _clean(value: float | None) -> float | None:
    """A finite number rounded for a small file, else ``None`` (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, 6)


def _timing(metric: str) -> bool:
    return metric.endswith("_ms") or metric.startswith("server_")


def _slim_table(table: Mapping[str, float | None], *, category: bool) -> dict[str, float | None]:
    """The measured values (a missing key reads as ``None`` all the same); timings only
    for the whole run: per category they are noise and most of a baseline's bytes."""
    return {
        k: c
        for k, v in table.items()
        if (c := _clean(v)) is not None and not (category and _timing(k))
    }


def slim_report(report: Report) -> Report:
    """``report`` without its cases and sweep (both per case), numbers rounded: what a
    committed baseline holds."""
    modes = {
        mode: ModeReport(
            overall=_slim_table(m.overall, category=False),
            by_category={
                cat: _slim_table(t, category=True) for cat, t in sorted(m.by_category.items())
            },
        )
        for mode, m in report.modes.items()
    }
    notes = [*report.meta.notes, *([] if SLIM_NOTE in report.meta.notes else [SLIM_NOTE])]
    meta = report.meta.model_copy(update={"notes": notes})
    return Report(meta=meta, modes=modes, cases=[], abstention_sweep={})


def save_baseline(report: Report, path: Path) -> Path:
    """The slim summary of ``report`` written to ``path`` (a file, or a directory: then
    ``<dir>/<dataset>.json``)."""
    path = Path(path)
    if path.is_dir():
        path = baseline_path(path, report.meta.dataset)
    return save_report(slim_report(report), path)


# ------------------------------------------------------------------ the before/after table


def _num(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def _show(metric: str, value: float | None) -> str:
    return fmt(metric, _num(value))


def _delta(metric: str, before: float | None, after: float | None) -> str:
    b, a = _num(before), _num(after)
    if b is None or a is None:
        return "n/a"
    d = a - b
    if not math.isfinite(d):  # two huge numbers of opposite signs
        return "n/a"
    if metric in _COUNTS:
        return f"{round(d):+d}"
    if metric.endswith("_ms"):
        ratio = d / b if b > 0 else math.inf
        rel = f" ({round(ratio, 2) + 0.0:+.0%})" if math.isfinite(ratio) else ""
        return f"{round(d, 1) + 0.0:+.1f}{rel}"
    return f"{round(d, 3) + 0.0:+.3f}"  # + 0.0: never "-0.000"


def _describe(label: str, r: Report) -> str:
    m = r.meta
    parts = [
        m.dataset,
        f"commit {m.git_commit or 'unknown'}",
        f"{m.created_at:%Y-%m-%d %H:%M} UTC",
        f"{m.n_cases} cases",
        f"top_k {m.top_k}",
    ]
    return f"{label} {', '.join(parts)}"


def _caveats(report: Report, baseline: Report) -> list[str]:
    """What makes the two runs not like for like (said, not hidden)."""
    a, b = report.meta, baseline.meta
    out = []
    if a.dataset != b.dataset:
        out.append(f"note: the baseline is of another dataset ({b.dataset} vs {a.dataset})")
    for what, x, y in (("cases", b.n_cases, a.n_cases), ("top_k", b.top_k, a.top_k)):
        if x != y:
            out.append(f"note: {what} differ ({x} before, {y} after): not like for like")
    return out


def _modes(report: Report, baseline: Report) -> list[str]:
    return [*report.modes, *(m for m in baseline.modes if m not in report.modes)]


def render_before_after(
    report: Report,
    baseline: Report,
    *,
    config: ThresholdConfig | None = None,
    metrics: Sequence[str] = BEFORE_AFTER_METRICS,
    category_metric: str = "recall@10",
) -> str:
    """Per mode, each key metric before | after | delta (marked better/worse where the
    gate's tolerances call the change significant), then ``category_metric`` per category,
    before -> after for every mode. Modes, metrics or categories on one side only show
    ``n/a`` on the other."""
    config = config or ThresholdConfig()
    # significant per the gate's tolerances (the thresholds file's, or the defaults)
    kinds = {
        (c.mode, c.scope, c.metric): ("better" if c.kind == "improvement" else "worse")
        for c in compare(report, baseline, config)
    }
    rows: list[list[str]] = []
    for mode in _modes(report, baseline):
        label = mode + ("" if mode in report.modes else " (before only)")
        label += "" if mode in baseline.modes else " (new)"
        for i, metric in enumerate(metrics):
            b, a = baseline.value(mode, metric), report.value(mode, metric)
            delta = _delta(metric, b, a)
            mark = "" if delta == "n/a" else kinds.get((mode, "overall", metric), "")
            row = [label if i == 0 else "", metric, _show(metric, b), _show(metric, a)]
            rows.append([*row, delta, mark])
    head = [_describe("before:", baseline), _describe("after: ", report)]
    main = grid(["mode", "metric", "before", "after", "delta", "change"], rows, left=2)
    parts = ["\n".join([*head, *_caveats(report, baseline)]), main]
    cats = _render_categories(report, baseline, category_metric)
    if cats:
        parts.append(cats)
    return "\n\n".join(parts)


def _n(report: Report, category: str) -> float | None:
    return next(
        (
            n
            for m in report.modes.values()
            if (n := _num(m.by_category.get(category, {}).get("n_cases"))) is not None
        ),
        None,
    )


def _render_categories(report: Report, baseline: Report, metric: str) -> str:
    cats = sorted({c for r in (report, baseline) for m in r.modes.values() for c in m.by_category})
    if not cats:
        return ""
    modes = _modes(report, baseline)
    rows = []
    for cat in cats:
        nb, na = _n(baseline, cat), _n(report, cat)
        n = (
            _show("n_cases", na)
            if nb == na or nb is None
            else (f"{_show('n_cases', nb)} -> {_show('n_cases', na)}")
        )
        cells = []
        for mode in modes:
            b, a = baseline.value(mode, metric, cat), report.value(mode, metric, cat)
            cells.append(f"{_show(metric, b)} -> {_show(metric, a)}")
        rows.append([cat, n, *cells])
    return grid([f"category ({metric}, before -> after)", "n", *modes], rows)
