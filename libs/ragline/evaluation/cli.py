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
        help="beir:<dir>, golden:<dir> or answerability:<SciFact dir> (the answerability "
        "benchmark built from SciFact, evaluation/answerability.py; prints its held-out "
        "figures); repeat to evaluate several datasets on one stack "
        "(each gets its own report under --out/<name> and its own thresholds)",
    )
    src.add_argument("--report", type=Path, help="gate/compare an existing report.json only")
    p.add_argument("--modes", default=ALL_MODES, help=f"comma-separated (default {ALL_MODES})")
    base = p.add_mutually_exclusive_group()
    base.add_argument(
        "--baseline",
        type=Path,
        action="append",
        help="earlier report.json (or slim baseline) to compare with: a before/after table "
        "and the gate's max_drop bounds; with several datasets repeat it, each file is "
        "matched to the dataset it names",
    )
    base.add_argument(
        "--baseline-dir",
        type=Path,
        help="baselines directory: each dataset is compared with DIR/<dataset>.json "
        "(e.g. golden-golden.json) when it exists",
    )
    p.add_argument(
        "--save-baseline",
        type=Path,
        metavar="DIR",
        help="write each run's slim summary (no per-case data) to DIR/<dataset>.json: the "
        "baseline the next run is measured against (review, then commit)",
    )
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
    from ragline.evaluation.baseline import dataset_slug

    slug = dataset_slug(dataset_name)
    if args.out is not None:
        several = args.dataset is not None and len(args.dataset) > 1
        return Path(args.out) / slug if several else Path(args.out)
    return Path("reports") / f"{slug}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"


def _dataset_name(args: argparse.Namespace, spec: str) -> str:
    """The name ``load_dataset`` gives ``spec`` (``golden:<dir name>``,
    ``beir:<dir name>:<split>``), known before anything is loaded or run."""
    kind, _, location = spec.partition(":")
    name = Path(location).name
    return f"beir:{name}:{args.split}" if kind == "beir" else f"{kind}:{name}"


def _baselines(args: argparse.Namespace, names: list[str]) -> list[Any]:
    """The baseline of each dataset (``None``: not compared), in the order of ``names``;
    loaded before the run, so a wrong path fails in a second, not after the run."""
    from ragline.errors import ConfigError
    from ragline.evaluation.baseline import baseline_path
    from ragline.evaluation.report import load_report

    if args.baseline_dir is not None:
        if not Path(args.baseline_dir).is_dir():
            raise ConfigError(f"--baseline-dir {args.baseline_dir}: not a directory")
        paths = [baseline_path(args.baseline_dir, n) for n in names]
        for name, path in zip(names, paths, strict=True):
            if not path.is_file():
                print(f"note: no baseline for {name} ({path} does not exist)")
        return [load_report(p) if p.is_file() else None for p in paths]
    loaded = [load_report(p) for p in args.baseline or ()]
    if len(names) == 1 and len(loaded) <= 1:
        return [loaded[0] if loaded else None]  # one run, one baseline: whatever it names
    by_name: dict[str, Any] = {}
    for path, b in zip(args.baseline or (), loaded, strict=True):
        if b.meta.dataset not in names:
            raise ConfigError(f"baseline {path} is of {b.meta.dataset}, not of {names}")
        if b.meta.dataset in by_name:
            raise ConfigError(f"two baselines of {b.meta.dataset}")
        by_name[b.meta.dataset] = b
    return [by_name.get(n) for n in names]


def _evaluate(args: argparse.Namespace) -> int:
    from ragline.errors import ConfigError
    from ragline.evaluation.answerability import render_held_out
    from ragline.evaluation.baseline import render_before_after, save_baseline
    from ragline.evaluation.evaluate import answerability_figures, write_outputs
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

    if args.dataset and len(args.dataset) > 1 and args.thresholds:
        raise ConfigError("--thresholds applies to one dataset; run them one by one")
    if args.save_baseline is not None and Path(args.save_baseline).is_file():
        raise ConfigError(f"--save-baseline {args.save_baseline}: a directory, not a file")
    specs: list[str | None]
    given = [load_report(args.report)] if args.report is not None else []
    if given:
        specs, names = [None], [given[0].meta.dataset]
    else:
        specs, names = list(args.dataset), [_dataset_name(args, s) for s in args.dataset]
    baselines = _baselines(args, names)
    configs = [
        load_thresholds(t) if (t := _thresholds_path(args, spec)) is not None else ThresholdConfig()
        for spec in specs
    ]
    if given:
        reports = given
    else:
        reports = asyncio.run(_produce(args))
        for report, baseline, config in zip(reports, baselines, configs, strict=True):
            out = _out_dir(args, report.meta.dataset)
            written = write_outputs(report, out, baseline, config)
            print(f"report written to {out}/: {', '.join(p.name for p in written)}")
    broken = False
    for report, baseline, config in zip(reports, baselines, configs, strict=True):
        if len(reports) > 1:
            print(f"\n== {report.meta.dataset}")
        print(render_table(report))
        print()
        print(render_categories(report))
        held = answerability_figures(report)
        if held is not None:
            print()
            print(render_held_out(held))
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
            print(render_before_after(report, baseline, config=config))
            print()
            print(render_changes(compare(report, baseline, config)))
        violations = check_thresholds(report, config, baseline)
        print()
        print(render_violations(violations))
        broken = broken or bool(violations)
        if args.save_baseline is not None:
            Path(args.save_baseline).mkdir(parents=True, exist_ok=True)
            print(f"baseline saved: {save_baseline(report, Path(args.save_baseline))}")
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
