"""The PNG comparison plot of a report: quality metrics, a per-category breakdown,
latency percentiles and the must-be-zero safety counts, modes side by side, the baseline
drawn as markers when given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragline.evaluation.report import Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["QUALITY_METRICS", "plot_reliability", "plot_report", "plot_sweep"]

QUALITY_METRICS: tuple[str, ...] = (
    "recall@1",
    "recall@5",
    "recall@10",
    "recall@100",
    "mrr",
    "ndcg@10",
    "abstention_recall",
)
LATENCY_METRICS: tuple[str, ...] = ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms")
SAFETY_METRICS: tuple[str, ...] = (
    "forbidden_hits",
    "unflagged_injection_hits",
    "forbidden_hit_rate",
    "error_rate",
)
Getter = Callable[[str, str], float | None]  # (mode, label) -> value


def _save(fig: Any, path: Path, dpi: int) -> None:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)


def _bars(
    ax: Axes,
    labels: Sequence[str],
    modes: Sequence[str],
    value: Getter,
    baseline: Getter | None,
) -> None:
    n = max(len(modes), 1)
    width = 0.8 / n
    for i, mode in enumerate(modes):
        xs = [x + (i - (n - 1) / 2) * width for x in range(len(labels))]
        ys = [value(mode, lab) or 0.0 for lab in labels]
        ax.bar(xs, ys, width=width, label=mode)
        if baseline is not None:
            bs = [baseline(mode, lab) for lab in labels]
            pts = [(x, b) for x, b in zip(xs, bs, strict=True) if b is not None]
            if pts:
                ax.scatter(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    marker="_",
                    s=120,
                    color="black",
                    zorder=3,
                    label="baseline" if i == 0 else None,
                )
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def plot_report(report: Report, path: Path, baseline: Report | None = None) -> Path:
    """Write the comparison PNG to ``path`` (matplotlib Agg: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = list(report.modes)
    cats = sorted({c for m in report.modes.values() for c in m.by_category})
    cat_metric = "recall@10" if report.meta.kind == "golden" else "ndcg@10"
    fig, axes = plt.subplots(1, 4, figsize=(22, 5.5), gridspec_kw={"width_ratios": [3, 4, 2, 2]})
    try:
        base_overall = (lambda m, k: baseline.value(m, k)) if baseline else None
        _bars(axes[0], QUALITY_METRICS, modes, report.value, base_overall)
        axes[0].set_ylim(0, 1.05)
        axes[0].set_title("quality (overall)")
        axes[0].legend(fontsize=8)

        base_cat = (lambda m, c: baseline.value(m, cat_metric, c)) if baseline else None
        _bars(axes[1], cats, modes, lambda m, c: report.value(m, cat_metric, c), base_cat)
        axes[1].set_ylim(0, 1.05)
        axes[1].set_title(f"{cat_metric} by category")

        short = [m.removeprefix("latency_").removesuffix("_ms") for m in LATENCY_METRICS]
        lat = {s: full for s, full in zip(short, LATENCY_METRICS, strict=True)}
        base_lat = (lambda m, s: baseline.value(m, lat[s])) if baseline else None
        _bars(axes[2], short, modes, lambda m, s: report.value(m, lat[s]), base_lat)
        axes[2].set_title(f"client latency, ms (concurrency {report.meta.concurrency})")

        # leaks and failures: every bar here should be zero
        _bars(axes[3], SAFETY_METRICS, modes, report.value, None)
        axes[3].set_title("must be zero (counts / rates)")

        when = report.meta.created_at.strftime("%Y-%m-%d %H:%M UTC")
        fig.suptitle(f"{report.meta.dataset}: {report.meta.n_cases} cases, {when}")
        _save(fig, path, 110)
    finally:
        plt.close(fig)
    return path


def plot_sweep(report: Report, path: Path) -> Path | None:
    """Abstention precision / recall / F1 and the false-abstain rate against the similarity
    threshold, one panel per mode with a similarity-decided case; the configured threshold
    dashed, the suggested one dotted. ``None`` (no file) when no mode has such a case."""
    sweeps = {m: sw for m, sw in report.abstention_sweep.items() if sw.n_sweepable}
    if not sweeps:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(sweeps), figsize=(4.2 * len(sweeps), 3.4), squeeze=False)
    try:
        for ax, (mode, sw) in zip(axes[0], sweeps.items(), strict=True):
            xs = [p.threshold for p in sw.points]
            series = {
                "precision": [p.abstention_precision for p in sw.points],
                "recall": [p.abstention_recall for p in sw.points],
                "F1": [p.abstention_f1 for p in sw.points],
                "answerable abstained": [p.false_abstain_rate for p in sw.points],
            }
            for label, ys in series.items():
                style = "--" if label == "answerable abstained" else "-"
                ax.plot(xs, [float("nan") if y is None else y for y in ys], style, label=label)
            if sw.configured is not None:
                ax.axvline(sw.configured, color="grey", ls="--", lw=1, label="configured")
            if sw.best is not None:
                ax.axvline(sw.best, color="green", ls=":", lw=1.5, label="suggested")
            ax.set_ylim(-0.02, 1.05)
            ax.set_xlabel("min similarity")
            ax.set_title(f"{mode} ({sw.n_sweepable}/{sw.n_cases} by similarity)", fontsize=9)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"{report.meta.dataset}: abstention vs threshold", fontsize=10)
        _save(fig, path, 100)
    finally:
        plt.close(fig)
    return path


def plot_reliability(curves: dict[str, Sequence[dict[str, float]]], path: Path, title: str) -> Path:
    """Reliability curves (evaluation/answerability.reliability): observed share of
    answerable cases against the mean predicted probability per bin, one line per label
    (e.g. the fit and the held-out half), the diagonal dashed; bin counts annotated."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    try:
        ax.plot([0, 1], [0, 1], "--", color="grey", lw=1, label="perfectly calibrated")
        for label, rows in curves.items():
            xs = [r["mean_p"] for r in rows]
            ax.plot(xs, [r["observed"] for r in rows], "o-", label=label)
            for r in rows:
                ax.annotate(f"{int(r['n'])}", (r["mean_p"], r["observed"]), fontsize=6)
        ax.set_xlabel("predicted answerable_probability (bin mean)")
        ax.set_ylabel("observed share answerable")
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title(title, fontsize=9)
        _save(fig, path, 100)
    finally:
        plt.close(fig)
    return path
