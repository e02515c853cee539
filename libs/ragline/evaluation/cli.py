"""``ragline eval``: ingest a dataset through the pipeline, query every mode over HTTP,
write the report (JSON, table, PNG), compare with a baseline and apply the gate.

Exit codes: 0 every threshold holds; 1 a threshold is broken (the CI gate); 2 bad
arguments or configuration; 3 a backend (Kafka, Postgres, the query service) is down or
the pipeline did not finish in time.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["EXIT_BACKEND", "EXIT_CONFIG", "EXIT_GATE", "EXIT_OK", "register"]

EXIT_OK, EXIT_GATE, EXIT_CONFIG, EXIT_BACKEND = 0, 1, 2, 3
ALL_MODES = "lexical,dense,hybrid,hybrid+rerank"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate retrieval on a BEIR dataset or the golden set",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--dataset",
        action="append",
        help="beir:<dir> or golden:<dir>; repeat to evaluate several datasets on one stack "
        "(each gets its own report under --out/<name> and its own thresholds)",
    )
    src.add_argument("--report", type=Path, help="gate/compare an existing report.json only")
    p.add_argument("--modes", default=ALL_MODES, help=f"comma-separated (default {ALL_MODES})")
    p.add_argument("--baseline", type=Path, help="earlier report.json to compare with")
    p.add_argument("--thresholds", type=Path, help="thresholds YAML (golden: its thresholds.yaml)")
    p.add_argument("--out", type=Path, help="output directory (default reports/<dataset>-<time>)")
    p.add_argument("--split", default="test", help="BEIR qrels split (default test)")
    p.add_argument("--tenant", default="eval", help="BEIR: tenant the corpus is ingested into")
    p.add_argument("--groups", default="eval", help="BEIR: comma-separated acl groups")
    p.add_argument("--limit", type=int, help="BEIR: evaluate only the first N queries")
    p.add_argument("--top-k", type=int, help="results requested per query (default 100)")
    p.add_argument("--concurrency", type=int, help="queries in flight per mode (default 2)")
    p.add_argument("--query-url", help="query service base URL (RAGLINE_EVAL_QUERY_URL)")
    p.add_argument(
        "--space",
        help="embedding space to evaluate (admin only: needs RAGLINE_QUERY_SPACE_ADMIN_KEY; "
        "default the live one)",
    )
    p.add_argument("--no-ingest", action="store_true", help="the dataset is already ingested")
    p.add_argument(
        "--private-stack",
        action="store_true",
        help="start a throw-away stack + every service for this run (no `make up` needed)",
    )
    p.add_argument("--keep-stack", action="store_true", help="keep the private stack's logs")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=main)


def _thresholds_path(args: argparse.Namespace, spec: str | None) -> Path | None:
    if args.thresholds is not None:
        return Path(args.thresholds)
    if spec and spec.startswith("golden:"):
        candidate = Path(spec.partition(":")[2]) / "thresholds.yaml"
        return candidate if candidate.is_file() else None
    return None


def _eval_settings(args: argparse.Namespace) -> Any:
    from ragline.evaluation.settings import EvalSettings

    overrides = {
        k: v
        for k, v in (
            ("top_k", args.top_k),
            ("concurrency", args.concurrency),
            ("query_url", args.query_url),
            ("space", getattr(args, "space", None)),
        )
        if v is not None
    }
    return EvalSettings().model_copy(update=overrides)


def _dataset(args: argparse.Namespace, spec: str) -> Any:
    from ragline.evaluation.datasets import load_dataset

    beir_options: dict[str, Any] = {}
    if spec.startswith("beir:"):
        beir_options = {
            "split": args.split,
            "tenant": args.tenant,
            "groups": tuple(g for g in args.groups.split(",") if g),
            "limit_queries": args.limit,
        }
    return load_dataset(spec, **beir_options)


async def _produce(args: argparse.Namespace) -> list[Any]:
    """Ingest, query, build one report per dataset (the part that needs the running
    platform); several datasets share one platform, one after another."""
    from pydantic import SecretStr

    from ragline.config import Settings
    from ragline.evaluation.evaluate import evaluate
    from ragline.evaluation.runner import parse_modes

    es = _eval_settings(args)
    modes = parse_modes(args.modes)  # fail on a typo before anything starts
    datasets = [_dataset(args, spec) for spec in args.dataset]  # all load before any run
    command = "ragline " + " ".join(sys.argv[1:])
    if not args.private_stack:
        return [
            await evaluate(
                dataset,
                settings=Settings(),
                eval_settings=es,
                modes=modes,
                ingest=not args.no_ingest,
                progress=not args.no_progress,
                command=command,
            )
            for dataset in datasets
        ]
    from ragline.platform.private import private_platform

    extra = {
        "RAGLINE_QUERY_MAX_TOP_K": str(max(es.top_k, 50)),
        "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
    }
    async with private_platform(extra_env=extra, keep_dir=args.keep_stack) as plat:
        es = es.model_copy(
            update={"query_url": plat.query_url, "jwt_secret": SecretStr(plat.jwt_secret)}
        )
        if args.keep_stack:
            print(f"private platform logs: {plat.log_dir}")
        return [
            await evaluate(
                dataset,
                settings=plat.settings,
                eval_settings=es,
                modes=modes,
                ingest=True,
                progress=not args.no_progress,
                command=command,
            )
            for dataset in datasets
        ]


def _out_dir(args: argparse.Namespace, dataset_name: str) -> Path:
    slug = dataset_name.replace(":", "-").replace("/", "-")
    if args.out is not None:
        several = args.dataset is not None and len(args.dataset) > 1
        return Path(args.out) / slug if several else Path(args.out)
    return Path("reports") / f"{slug}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"


def _evaluate(args: argparse.Namespace) -> int:
    from ragline.errors import ConfigError
    from ragline.evaluation.evaluate import write_outputs
    from ragline.evaluation.gate import (
        ThresholdConfig,
        check_thresholds,
        compare,
        load_thresholds,
        render_changes,
        render_violations,
    )
    from ragline.evaluation.report import (
        case_failures,
        load_report,
        render_categories,
        render_table,
        sweep_summary,
    )

    if args.dataset and len(args.dataset) > 1 and (args.baseline or args.thresholds):
        raise ConfigError("--baseline/--thresholds apply to one dataset; run them one by one")
    baseline = load_report(args.baseline) if args.baseline is not None else None
    if args.report is not None:
        runs = [(load_report(args.report), None)]
    else:
        runs = []
        for spec, report in zip(args.dataset, asyncio.run(_produce(args)), strict=True):
            out = _out_dir(args, report.meta.dataset)
            written = write_outputs(report, out, baseline)
            print(f"report written to {out}/: {', '.join(p.name for p in written)}")
            runs.append((report, spec))
    broken = False
    for report, spec in runs:
        if len(runs) > 1:
            print(f"\n== {report.meta.dataset}")
        tpath = _thresholds_path(args, spec)
        config = load_thresholds(tpath) if tpath is not None else ThresholdConfig()
        print(render_table(report))
        print()
        print(render_categories(report))
        sweep = sweep_summary(report)
        if sweep:
            print()
            print("\n".join(sweep))
        for note in report.meta.notes:
            print(f"note: {note}")
        for f in case_failures(report):
            print(f"FAILED CASE {f}")
        if baseline is not None:
            print()
            print(render_changes(compare(report, baseline, config)))
        violations = check_thresholds(report, config, baseline)
        print()
        print(render_violations(violations))
        broken = broken or bool(violations)
    return EXIT_GATE if broken else EXIT_OK


def main(args: argparse.Namespace) -> int:
    from ragline.errors import BackendUnavailable, ConfigError, TransientError
    from ragline.evaluation.ingest import IngestTimeout

    try:
        return _evaluate(args)
    except ConfigError as exc:
        print(f"ragline eval: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except (BackendUnavailable, TransientError, IngestTimeout) as exc:
        print(f"ragline eval: {exc}", file=sys.stderr)
        return EXIT_BACKEND
