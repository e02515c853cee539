"""``ragline embeddings promote``: the evaluation gate of an embedding space.

The golden set (and any BEIR dataset given) runs against the query service twice, side
by side: once in the live space and once in the shadow, both named explicitly (admin
header, ADR 0013) so a concurrent flip cannot blur the comparison. The shadow's report
is gated with the dataset's thresholds, the live report as the baseline (so every
``max_drop`` bound is a regression bound against live), plus ``forbidden_hits`` and
``error_rate`` at most 0 whatever the file says. Only if nothing is broken does the flip
happen (``ragline.store.spaces.promote``: one transaction, refused if the live space
changed meanwhile or the shadow lacks vectors). ``--force`` flips anyway, needs a
``--reason`` and is audited with the violations it overrode; a refusal is audited too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ragline.config import Settings
from ragline.errors import ConfigError
from ragline.evaluation.datasets import load_dataset
from ragline.evaluation.evaluate import evaluate, write_outputs
from ragline.evaluation.gate import (
    Threshold,
    ThresholdConfig,
    Violation,
    check_thresholds,
    load_thresholds,
    render_violations,
)
from ragline.evaluation.report import Report
from ragline.evaluation.runner import parse_modes
from ragline.evaluation.settings import EvalSettings

__all__ = ["ALWAYS", "GateResult", "gate_reports", "run_promotion"]

# never negotiable, whatever the thresholds file says
ALWAYS: tuple[Threshold, ...] = (
    Threshold(metric="forbidden_hits", max=0, allow_missing=True),
    Threshold(metric="error_rate", max=0, allow_missing=True),
)
_SUMMARY = ("recall@10", "ndcg@10", "mrr", "forbidden_hits", "error_rate")


class GateResult:
    def __init__(self, dataset: str, live: Report, shadow: Report, violations: list[Violation]):
        self.dataset = dataset
        self.live = live
        self.shadow = shadow
        self.violations = violations

    def evidence(self) -> dict[str, Any]:
        def table(r: Report) -> dict[str, dict[str, float | None]]:
            return {m: {k: r.value(m, k) for k in _SUMMARY} for m in r.modes}

        return {
            "dataset": self.dataset,
            "live": table(self.live),
            "shadow": table(self.shadow),
            "violations": [
                {
                    "mode": v.mode,
                    "scope": v.scope,
                    "metric": v.metric,
                    "value": v.value,
                    "bound": v.bound,
                }
                for v in self.violations
            ],
        }


def gate_reports(shadow: Report, live: Report, config: ThresholdConfig) -> list[Violation]:
    """Violations of the shadow's report, with the live report as the baseline."""
    full = config.model_copy(update={"thresholds": (*config.thresholds, *ALWAYS)})
    return check_thresholds(shadow, full, baseline=live)


def _thresholds(spec: str, explicit: str | None) -> ThresholdConfig:
    if explicit:
        return load_thresholds(Path(explicit))
    if spec.startswith("golden:"):
        path = Path(spec.partition(":")[2]) / "thresholds.yaml"
        if path.is_file():
            return load_thresholds(path)
    # a BEIR dataset without a file: no ranking metric may drop by more than 0.02
    return ThresholdConfig(
        thresholds=tuple(
            Threshold(metric=m, mode="*", max_drop=0.02) for m in ("ndcg@10", "recall@10")
        )
    )


async def run_promotion(args: argparse.Namespace, *, actor: str) -> int:
    """The CLI's promote: 0 flipped, 1 refused by the gate, 2 not possible (state)."""
    import psycopg
    from pgvector.psycopg import register_vector_async

    from ragline.store.spaces import (
        SpaceIncomplete,
        count_missing,
        get_space,
        live_space,
        record_event,
    )
    from ragline.store.spaces import promote as flip

    if args.force and not args.reason:
        raise ConfigError("--force needs --reason (it is audited)")
    settings = Settings()
    es = EvalSettings()
    if args.query_url:
        es = es.model_copy(update={"query_url": args.query_url})
    if es.space_admin_key is None:
        raise ConfigError("the gate queries a non-live space: set RAGLINE_QUERY_SPACE_ADMIN_KEY")
    modes = parse_modes(args.modes)
    specs = args.dataset or ["golden:tests/golden"]
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn(), autocommit=True) as conn:
        await register_vector_async(conn)
        target = await get_space(conn, args.space)
        live = await live_space(conn)
        if target.state != "shadow":
            raise ConfigError(f"space {target.name!r} is {target.state}, not shadow")
        missing = await count_missing(conn, target)
        if missing and not args.force:
            raise SpaceIncomplete(target.name, missing)
        results: list[GateResult] = []
        for spec in specs:
            options: dict[str, Any] = {"split": args.split} if spec.startswith("beir:") else {}
            if spec.startswith("beir:") and args.limit:
                options["limit_queries"] = args.limit
            dataset = load_dataset(spec, **options)
            reports = {}
            for side, space in (("live", live), ("shadow", target)):
                reports[side] = await evaluate(
                    dataset,
                    settings=settings,
                    eval_settings=es.model_copy(update={"space": space.name}),
                    modes=modes,
                    ingest=False,
                    progress=False,
                    command=f"ragline embeddings promote {target.name} ({side}: {space.name})",
                )
            violations = gate_reports(
                reports["shadow"], reports["live"], _thresholds(spec, args.thresholds)
            )
            res = GateResult(dataset.name, reports["live"], reports["shadow"], violations)
            results.append(res)
            if args.out:
                slug = dataset.name.replace(":", "-").replace("/", "-")
                write_outputs(reports["live"], Path(args.out) / slug / "live", None)
                write_outputs(reports["shadow"], Path(args.out) / slug / "shadow", reports["live"])
            print(f"== {dataset.name}: {target.name} (shadow) vs {live.name} (live)")
            _print_side_by_side(res)
            print(render_violations(violations))
        evidence = {"datasets": [r.evidence() for r in results], "modes": list(modes)}
        refused = any(r.violations for r in results)
        if args.out:
            decision = {
                "space": target.name,
                "live": live.name,
                "refused": refused,
                "forced": bool(args.force),
                **evidence,
            }
            _write_json(Path(args.out) / "decision.json", decision)
        if refused and not args.force:
            await record_event(
                conn,
                "refuse",
                target.space_id,
                actor=actor,
                from_space_id=live.space_id,
                reason=args.reason or "gate: a gated metric regressed",
                evidence=evidence,
            )
            print(f"REFUSED: {target.name!r} stays shadow; {live.name!r} stays live")
            return 1
        old, new = await flip(
            conn,
            target.name,
            actor=actor,
            forced=bool(args.force),
            reason=args.reason,
            evidence=evidence,
            expect_live=live.space_id,
        )
    note = " (FORCED past the gate, audited)" if args.force and refused else ""
    print(f"PROMOTED: live space {old.name!r} -> {new.name!r}{note}")
    return 0


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _print_side_by_side(res: GateResult) -> None:
    for mode in res.shadow.modes:
        cells = []
        for metric in _SUMMARY:
            a, b = res.live.value(mode, metric), res.shadow.value(mode, metric)
            if a is None and b is None:
                continue
            fa = "-" if a is None else f"{a:.3f}"
            fb = "-" if b is None else f"{b:.3f}"
            cells.append(f"{metric} {fa} -> {fb}")
        print(f"  {mode:<14} " + "; ".join(cells))
