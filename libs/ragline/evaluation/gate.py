"""The CI gate: configured thresholds per metric / mode / category, and the comparison of a
report with a baseline report (regressions and improvements).

Thresholds file (YAML)::

    version: 1
    tolerance: 0.01            # |change| below this is "unchanged" (rates and scores)
    latency_tolerance: 0.10    # relative, for *_ms metrics
    thresholds:
      - {metric: forbidden_hits, max: 0}                 # every mode, overall
      - {metric: recall@10, mode: hybrid, min: 0.7}
      - {metric: recall@5, mode: hybrid, category: exact_identifier, min: 0.8}
      - {metric: ndcg@10, mode: "*", max_drop: 0.03}     # needs --baseline

``mode: "*"`` (the default) applies to every mode in the report, ``category: "*"`` to
every category; no category means the overall figure. A metric that is ``None`` (not
measurable in this run) violates its threshold unless ``allow_missing: true``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ragline.errors import ConfigError
from ragline.evaluation.report import Report, fmt
from ragline.evaluation.summary import lower_is_better

__all__ = [
    "Change",
    "Threshold",
    "ThresholdConfig",
    "Violation",
    "check_thresholds",
    "compare",
    "load_thresholds",
    "render_changes",
    "render_violations",
]


class Threshold(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    mode: str = "*"
    category: str | None = None
    min: float | None = None
    max: float | None = None
    max_drop: float | None = Field(default=None, ge=0, description="vs the baseline report")
    allow_missing: bool = False

    @model_validator(mode="after")
    def _has_bound(self) -> Threshold:
        if self.min is None and self.max is None and self.max_drop is None:
            raise ValueError(f"threshold on {self.metric}: give min, max or max_drop")
        return self


class ThresholdConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    tolerance: float = Field(default=0.01, ge=0)
    latency_tolerance: float = Field(default=0.10, ge=0)
    thresholds: tuple[Threshold, ...] = ()


def load_thresholds(path: Path) -> ThresholdConfig:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        return ThresholdConfig.model_validate(raw)
    except OSError as exc:
        raise ConfigError(f"thresholds {path}: {exc.strerror}") from None
    except (yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"thresholds {path} are invalid: {exc}") from None


@dataclass(frozen=True, kw_only=True)
class Violation:
    mode: str
    scope: str  # "overall" or a category
    metric: str
    value: float | None
    bound: str  # e.g. "min 0.700", "max_drop 0.030 (baseline 0.812)"


@dataclass(frozen=True, kw_only=True)
class Change:
    mode: str
    scope: str
    metric: str
    baseline: float
    current: float
    kind: Literal["regression", "improvement"]

    @property
    def delta(self) -> float:
        return self.current - self.baseline


def _scopes(report: Report, mode: str, category: str | None) -> list[str | None]:
    if category is None:
        return [None]
    if category == "*":
        return list(report.modes[mode].by_category)
    return [category]


def _broken(t: Threshold, value: float | None, base: float | None) -> list[str]:
    """The bounds of ``t`` that ``value`` breaks, described for the gate's output."""
    if value is None:
        return [] if t.allow_missing else ["measured (it is missing)"]
    out: list[str] = []
    if t.min is not None and value < t.min:
        out.append(f"min {fmt(t.metric, t.min)}")
    if t.max is not None and value > t.max:
        out.append(f"max {fmt(t.metric, t.max)}")
    if t.max_drop is not None and base is not None:
        drop = value - base if lower_is_better(t.metric) else base - value
        if drop > t.max_drop + 1e-12:
            out.append(f"max_drop {t.max_drop:g} (baseline {fmt(t.metric, base)})")
    return out


def check_thresholds(
    report: Report, config: ThresholdConfig, baseline: Report | None = None
) -> list[Violation]:
    """Every threshold that the report breaks. Modes the report lacks are skipped."""
    out: list[Violation] = []
    for t in config.thresholds:
        modes = list(report.modes) if t.mode == "*" else [t.mode]
        for mode in modes:
            if mode not in report.modes:
                continue
            for cat in _scopes(report, mode, t.category):
                scope = cat or "overall"
                value = report.value(mode, t.metric, cat)

                base = baseline.value(mode, t.metric, cat) if baseline is not None else None
                out.extend(
                    Violation(mode=mode, scope=scope, metric=t.metric, value=value, bound=b)
                    for b in _broken(t, value, base)
                )
    return out


def compare(report: Report, baseline: Report, config: ThresholdConfig) -> list[Change]:
    """Regressions and improvements per mode, scope (overall + categories) and metric."""
    changes: list[Change] = []
    for mode, cur in report.modes.items():
        base = baseline.modes.get(mode)
        if base is None:
            continue
        scopes = [("overall", cur.overall, base.overall)] + [
            (cat, table, base.by_category[cat])
            for cat, table in cur.by_category.items()
            if cat in base.by_category
        ]
        for scope, now, then in scopes:
            for metric, value in now.items():
                old = then.get(metric)
                if value is None or old is None or metric == "n_cases":
                    continue
                delta = value - old
                if metric.endswith("_ms"):
                    significant = abs(delta) > config.latency_tolerance * max(abs(old), 1e-9)
                else:
                    significant = abs(delta) > config.tolerance
                if not significant:
                    continue
                better = delta < 0 if lower_is_better(metric) else delta > 0
                changes.append(
                    Change(
                        mode=mode,
                        scope=scope,
                        metric=metric,
                        baseline=old,
                        current=value,
                        kind="improvement" if better else "regression",
                    )
                )
    return changes


def render_changes(changes: list[Change]) -> str:
    if not changes:
        return "no significant change against the baseline"
    lines: list[str] = []
    for kind in ("regression", "improvement"):
        sel = [c for c in changes if c.kind == kind]
        lines.append(f"{kind}s: {len(sel)}")
        for c in sorted(sel, key=lambda c: (c.mode, c.scope != "overall", c.scope, c.metric)):
            sign = "+" if c.delta >= 0 else "-"
            lines.append(
                f"  {c.mode:<14} {c.scope:<20} {c.metric:<24} "
                f"{fmt(c.metric, c.baseline)} -> {fmt(c.metric, c.current)} "
                f"({sign}{fmt(c.metric, abs(c.delta))})"
            )
    return "\n".join(lines)


def render_violations(violations: list[Violation]) -> str:
    if not violations:
        return "gate: PASS (every threshold holds)"
    lines = [f"gate: FAIL ({len(violations)} threshold(s) broken)"]
    lines.extend(
        f"  {v.mode:<14} {v.scope:<20} {v.metric:<24} = {fmt(v.metric, v.value)}; needs {v.bound}"
        for v in violations
    )
    return "\n".join(lines)
