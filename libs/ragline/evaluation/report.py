"""The evaluation report: one JSON document per run (modes side by side, overall and per
category, every case's ids and numbers) and its readable text tables."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragline.errors import ConfigError
from ragline.evaluation.datasets import EvalDataset
from ragline.evaluation.summary import CaseResult, CaseRun, summarize_mode
from ragline.evaluation.sweep import AbstentionSweep, SweepPoint, sweep_mode

__all__ = [
    "TABLE_METRICS",
    "ModeReport",
    "Report",
    "ReportMeta",
    "build_report",
    "grid",
    "host_info",
    "load_report",
    "render_categories",
    "render_sweep",
    "render_table",
    "save_report",
    "sweep_summary",
    "with_sweep",
]

TABLE_METRICS: tuple[str, ...] = (
    "recall@1",
    "recall@5",
    "recall@10",
    "recall@100",
    "precision@5",
    "mrr",
    "ndcg@10",
    "abstention_precision",
    "abstention_recall",
    "forbidden_hit_rate",
    "forbidden_hits",
    "unflagged_injection_hits",
    "error_rate",
    "degraded_rate",
    "cache_hit_rate",
    "rerank_applied_rate",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "server_p50_ms",
)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModeReport(_Model):
    overall: dict[str, float | None]
    by_category: dict[str, dict[str, float | None]]


class ReportMeta(_Model):
    dataset: str
    kind: Literal["beir", "golden", "answerability"]
    created_at: datetime
    modes: list[str]
    top_k: int
    concurrency: int
    n_cases: int
    n_documents: int
    query_url: str | None = None
    host: dict[str, str | int | float | None] = Field(default_factory=dict)
    git_commit: str | None = None
    command: str | None = None
    ingest: dict[str, float | int | str | None] | None = None
    notes: list[str] = Field(default_factory=list)


class Report(_Model):
    schema_version: Literal[1] = 1
    meta: ReportMeta
    modes: dict[str, ModeReport]
    cases: list[CaseResult]
    # per mode: abstention at other similarity thresholds, replayed (``sweep.py``)
    abstention_sweep: dict[str, AbstentionSweep] = Field(default_factory=dict)

    def value(self, mode: str, metric: str, category: str | None = None) -> float | None:
        m = self.modes.get(mode)
        if m is None:
            return None
        table = m.overall if category is None else m.by_category.get(category, {})
        return table.get(metric)


def host_info() -> dict[str, str | int | float | None]:
    ram: float | None = None
    try:
        ram = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        ram = None
    return {
        "cores": os.cpu_count(),
        "ram_gib": ram,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except OSError:
        return None
    return out.stdout.strip() or None


def build_report(
    dataset: EvalDataset,
    runs_by_mode: Mapping[str, Sequence[CaseRun]],
    *,
    top_k: int,
    concurrency: int,
    query_url: str | None = None,
    command: str | None = None,
    ingest: dict[str, float | int | str | None] | None = None,
    notes: Sequence[str] = (),
) -> Report:
    notes = list(notes)
    if top_k < 100:
        notes.append(f"top_k={top_k} < 100: recall@100 is recall@{top_k}")
    modes: dict[str, ModeReport] = {}
    cases: list[CaseResult] = []
    sweeps: dict[str, AbstentionSweep] = {}
    for mode, runs in runs_by_mode.items():
        s = summarize_mode(dataset, runs)
        modes[mode] = ModeReport(overall=s.overall, by_category=s.by_category)
        cases.extend(s.cases)
        sweeps[mode] = sweep_mode(s.cases)
    meta = ReportMeta(
        dataset=dataset.name,
        kind=dataset.kind,
        created_at=datetime.now(UTC),
        modes=list(runs_by_mode),
        top_k=top_k,
        concurrency=concurrency,
        n_cases=len(dataset.cases),
        n_documents=len(dataset.documents),
        query_url=query_url,
        host=host_info(),
        git_commit=_git_commit(),
        command=command,
        ingest=ingest,
        notes=list(notes),
    )
    return Report(meta=meta, modes=modes, cases=cases, abstention_sweep=sweeps)


def with_sweep(report: Report) -> Report:
    """The report with its abstention sweep recomputed from its cases (a report saved
    before the sweep existed, or by an older rule, gets the current one; no re-query)."""
    sweeps = {m: sweep_mode([c for c in report.cases if c.mode == m]) for m in report.modes}
    return report.model_copy(update={"abstention_sweep": sweeps})


def save_report(report: Report, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return path


def load_report(path: Path) -> Report:
    """The report, its abstention sweep recomputed from its cases: the sweep is derived
    data, so a report saved before it existed or under another rule loads all the same."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(raw, dict):
            raw.pop("abstention_sweep", None)
        return with_sweep(Report.model_validate(raw))
    except OSError as exc:
        raise ConfigError(f"report {path}: {exc.strerror}") from None
    except ValueError as exc:  # JSON or validation (pydantic's ValidationError is one)
        raise ConfigError(f"report {path} is not an evaluation report: {exc}") from None


def fmt(metric: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    if metric.endswith("_ms"):
        return f"{value:.1f}"
    if metric in {"forbidden_hits", "unflagged_injection_hits", "n_cases"}:
        return str(round(value))
    return f"{value:.3f}"


def grid(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    """A plain-text table: the first ``left`` columns left-aligned, the rest right."""
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        aligned = (
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(aligned).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def render_table(report: Report, metrics: Sequence[str] = TABLE_METRICS) -> str:
    """Metrics down, modes across: the side-by-side comparison of one run."""
    modes = list(report.modes)
    rows = [[m, *(fmt(m, report.value(mode, m)) for mode in modes)] for m in metrics]
    return grid(["metric", *modes], rows)


def render_categories(report: Report, metric: str = "recall@10") -> str:
    """Categories down, modes across, for one metric (plus case counts)."""
    modes = list(report.modes)
    cats = sorted({c for m in report.modes.values() for c in m.by_category})
    rows = []
    for cat in cats:
        n = next(
            (
                report.value(mode, "n_cases", cat)
                for mode in modes
                if report.value(mode, "n_cases", cat) is not None
            ),
            None,
        )
        rows.append(
            [
                cat,
                fmt("n_cases", n),
                *(fmt(metric, report.value(mode, metric, cat)) for mode in modes),
            ]
        )
    return grid([f"category ({metric})", "n", *modes], rows)


def _sweep_table(sw: AbstentionSweep) -> str:
    rows = []
    for p in sw.points:
        marks = []
        if sw.configured is not None and abs(p.threshold - sw.configured) < 1e-9:
            marks.append("configured")
        if sw.best is not None and abs(p.threshold - sw.best) < 1e-9:
            marks.append("best")
        if sw.best_unconstrained not in (None, sw.best) and (
            abs(p.threshold - (sw.best_unconstrained or 0.0)) < 1e-9
        ):
            marks.append("best at any cost")
        rows.append(
            [
                f"{p.threshold:.3f}",
                fmt("p", p.abstention_precision),
                fmt("r", p.abstention_recall),
                fmt("f1", p.abstention_f1),
                str(p.abstained),
                str(p.false_abstains),
                fmt("rate", p.false_abstain_rate),
                fmt("lost", p.recall_lost),
                str(p.recall_unknown),
                ", ".join(marks),
            ]
        )
    header = [
        "threshold",
        "precision",
        "recall",
        "f1",
        "abstains",
        "false",
        "false rate",
        "recall@10 lost",
        "unknown",
        "",
    ]
    return grid(header, rows)


def render_sweep(report: Report) -> str:
    """Per mode, abstention precision/recall/F1 and the cost on answerable cases at each
    similarity threshold, replayed from the run (modes without a similarity-decided case
    are one line: the threshold changes nothing there)."""
    parts: list[str] = []
    for mode, sw in report.abstention_sweep.items():
        if sw.n_sweepable == 0:
            parts.append(f"abstention sweep ({mode}): no similarity-decided case, nothing moves")
            continue
        budget = f"{sw.max_added_false_abstain_rate:.0%}"
        head = (
            f"abstention sweep ({mode}): {sw.n_sweepable} of {sw.n_cases} cases decided by "
            f"similarity, {sw.n_answerable} answerable; best = highest F1 abstaining on at "
            f"most {budget} more answerable cases than the configured threshold"
        )
        if sw.best_range is not None:
            head += f" (as good from {sw.best_range[0]:.3f} to {sw.best_range[1]:.3f})"
        parts.append(head + "\n" + _sweep_table(sw))
    return "\n\n".join(parts)


def sweep_summary(report: Report) -> list[str]:
    """One line per mode: the configured and the suggested threshold, side by side."""
    lines = []
    for mode, sw in report.abstention_sweep.items():
        if sw.n_sweepable == 0:
            continue
        cur, best = sw.point(sw.configured), sw.point(sw.best)

        def show(p: SweepPoint | None) -> str:
            if p is None:
                return "n/a"
            return (
                f"{p.threshold:.3f} (P {fmt('p', p.abstention_precision)}, "
                f"R {fmt('r', p.abstention_recall)}, {p.false_abstains} answerable abstained)"
            )

        lines.append(f"abstention ({mode}): configured {show(cur)}, suggested {show(best)}")
    return lines


def case_failures(report: Report) -> list[dict[str, Any]]:
    """Cases with a forbidden hit, an unflagged injection or an error: always printed."""
    return [
        {
            "case": r.case_id,
            "mode": r.mode,
            "forbidden": r.forbidden_documents,
            "unflagged": r.unflagged_documents,
            "error": r.error,
        }
        for r in report.cases
        if r.forbidden_documents or r.unflagged_documents or r.error
    ]
