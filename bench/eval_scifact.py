"""SciFact (BEIR, train split) through the real pipeline, every retrieval mode side by side.

``make eval-scifact`` runs this. It starts a private stack and every service (nothing
from ``make up`` is needed or touched), publishes the 5,183 abstracts to
``source.changes``, waits until Postgres shows them indexed, asks the 809 train queries
over HTTP in lexical, dense, hybrid and hybrid+rerank mode, and writes
bench/out/scifact/report.{json,txt,png}.

With ``--tune`` it then restarts only the query service once per tuning step (one knob
changed from the defaults, no re-ingest), runs hybrid again and writes what each step
changed to bench/out/scifact/tuning.json and tuning.md (the baseline's row first).

With ``--baseline`` (``make eval-scifact`` passes bench/baselines/beir-scifact-train.json)
report.txt and the output start with every key metric before | after | delta;
``--save-baseline DIR`` writes this run's slim summary to DIR/beir-scifact-train.json.

    .venv/bin/python bench/eval_scifact.py [--limit N] [--modes hybrid,dense] [--tune]
        [--baseline old/report.json] [--save-baseline DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUERY_ENV = {
    "RAGLINE_QUERY_MAX_TOP_K": "100",
    "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
    # one torch thread per query embedding: on a busy 2-core machine two threads make a
    # single-sentence encode ~10x slower (measured 567 ms vs 53 ms p50), see docs
    "OMP_NUM_THREADS": "1",
    # this measures retrieval, so every query must reach it: with the answer cache on, a
    # repeated query is a hit (the cache key's index version includes the ranking
    # fingerprint, so a tuning step never reads another step's answers, but the repeated
    # baseline would). The cache has its own benchmark (docs/cache.md).
    "RAGLINE_CACHE_ENABLED": "false",
}
# one knob at a time, from the defaults (RAGLINE_QUERY_* of the query service)
TUNING_STEPS: tuple[tuple[str, dict[str, str]], ...] = (
    ("no abstention", {"RAGLINE_QUERY_ABSTAIN_MIN_SIMILARITY": "-1"}),
    ("fusion rrf", {"RAGLINE_QUERY_FUSION": "rrf"}),
    ("abstain rules only", {"RAGLINE_QUERY_ABSTAIN_MODEL": "similarity"}),
    ("rrf_k 20", {"RAGLINE_QUERY_RRF_K": "20"}),
    ("rrf_k 120", {"RAGLINE_QUERY_RRF_K": "120"}),
    ("dense weight 1.5", {"RAGLINE_QUERY_WEIGHT_DENSE": "1.5"}),
    ("lexical weight 1.5", {"RAGLINE_QUERY_WEIGHT_LEXICAL": "1.5"}),
    ("hnsw ef_search 200", {"RAGLINE_QUERY_HNSW_EF_SEARCH": "200"}),
)
KEY_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr", "latency_p50_ms", "cache_hit_rate")


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--modes", default="lexical,dense,hybrid,hybrid+rerank")
    p.add_argument("--limit", type=int, help="only the first N train queries")
    p.add_argument("--tune", action="store_true", help="run the tuning steps after the baseline")
    p.add_argument(
        "--baseline", type=Path, help="an earlier report.json or slim baseline to compare with"
    )
    p.add_argument(
        "--save-baseline",
        type=Path,
        metavar="DIR",
        help="write this run's slim summary to DIR/<dataset>.json (the next run's baseline)",
    )
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "scifact")
    p.add_argument("--ingest-timeout", type=float, default=7200.0, help="seconds")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--hold",
        action="store_true",
        help="after the baseline keep the stack and run the requests appended to "
        "OUT/requests.jsonl ({name, env, modes} a line; the query service restarts with the "
        "code on disk) until OUT/stop exists: an after-run without re-ingesting",
    )
    p.add_argument(
        "--paraphrase",
        action="store_true",
        help="after the run, the paraphrase fusion report on the same stack "
        "(bench/paraphrase_fusion.py, defaults) in OUT/paraphrase: `make eval-paraphrase`",
    )
    return p.parse_args(argv)


def _row(report: Any, mode: str) -> dict[str, float | None]:
    return {m: report.value(mode, m) for m in KEY_METRICS}


def _baseline_step(baseline: Any) -> dict[str, Any]:
    """The baseline's hybrid row, first in the tuning table (what the steps are up against)."""
    m = baseline.meta
    name = f"baseline ({m.git_commit or 'unknown commit'}, {m.created_at:%Y-%m-%d})"
    return {"step": name, "env": {}, "hybrid": _row(baseline, "hybrid"), "baseline": True}


def _tuning_md(steps: list[dict[str, Any]]) -> str:
    head = "| step | env | " + " | ".join(KEY_METRICS) + " |"
    lines = [head, "|" + "---|" * (len(KEY_METRICS) + 2)]
    for s in steps:
        env = ", ".join(f"{k.removeprefix('RAGLINE_QUERY_')}={v}" for k, v in s["env"].items())
        env = "(its own code and settings)" if s.get("baseline") else env or "defaults"
        vals = " | ".join("n/a" if v is None else f"{v:.3f}" for v in s["hybrid"].values())
        lines.append(f"| {s['step']} | {env} | {vals} |")
    return "\n".join(lines) + "\n"


async def _rerun(
    plat: Any, es: Any, dataset: Any, env: dict[str, str], modes: list[str], progress: bool
) -> Any:
    """Restart the query service with ``env`` over the defaults (the code on disk) and run
    ``modes`` without re-ingesting."""
    from ragline.evaluation.client import QueryClient
    from ragline.evaluation.evaluate import evaluate, wait_ready

    url = await plat.restart_query({**QUERY_ENV, **env})
    step_es = es.model_copy(update={"query_url": url})
    async with QueryClient(step_es) as client:
        await wait_ready(client, timeout_s=300)
    return await evaluate(
        dataset,
        settings=plat.settings,
        eval_settings=step_es,
        modes=modes,
        ingest=False,
        progress=progress,
    )


async def _step(
    plat: Any, es: Any, dataset: Any, name: str, env: dict[str, str], progress: bool
) -> dict[str, Any]:
    """Restart the query service with ``env`` over the defaults and run hybrid."""
    r = await _rerun(plat, es, dataset, env, ["hybrid"], progress)
    row = _row(r, "hybrid")
    print(f"tuning: {name}: {row}")
    return {"step": name, "env": env, "hybrid": row}


async def _hold(plat: Any, es: Any, dataset: Any, out: Path, baseline: Any, progress: bool) -> None:
    """Serve after-runs on the ingested stack: one line of ``out/requests.jsonl`` each
    (``{"name": ..., "env": {...}, "modes": [...]}``), report in ``out/held/<name>/``
    with the baseline as its before; ``out/stop`` ends it."""
    from ragline.errors import ConfigError
    from ragline.evaluation.evaluate import write_outputs
    from ragline.evaluation.report import render_table

    done = 0
    requests = out / "requests.jsonl"
    print(f"holding: append requests to {requests}, touch {out / 'stop'} to end", flush=True)
    while not (out / "stop").exists():
        lines = requests.read_text().splitlines() if requests.exists() else []
        todo = lines[done:]
        if not todo:
            await asyncio.sleep(10)
            continue
        for line in todo:
            done += 1
            if not line.strip():
                continue
            try:  # a bad line is reported and skipped: it must not end the held stack
                req = json.loads(line)
                env, modes = _held_request(req)
                r = await _rerun(plat, es, dataset, env, modes, progress)
            except (ValueError, TypeError, ConfigError) as exc:
                print(f"held request {done} skipped: {exc}", flush=True)
                continue
            write_outputs(r, out / "held" / str(req["name"]), baseline)
            print(f"held {req['name']}:\n{render_table(r)}", flush=True)


def _held_request(req: Any) -> tuple[dict[str, str], list[str]]:
    """``env`` and ``modes`` of one request line; ``modes`` a list or a comma-separated
    string."""
    if not isinstance(req, dict) or not str(req.get("name", "")).strip():
        raise ValueError("a request needs a name")
    modes = req.get("modes", ["hybrid"])
    if isinstance(modes, str):
        modes = [m.strip() for m in modes.split(",") if m.strip()]
    env = req.get("env", {})
    if not isinstance(env, dict):
        raise TypeError("env must be an object")
    return {str(k): str(v) for k, v in env.items()}, [str(m) for m in modes]


async def _run(args: argparse.Namespace) -> int:
    from pydantic import SecretStr

    from ragline.evaluation.baseline import render_before_after, save_baseline
    from ragline.evaluation.datasets import load_beir
    from ragline.evaluation.evaluate import evaluate, write_outputs
    from ragline.evaluation.gate import ThresholdConfig, compare, render_changes
    from ragline.evaluation.report import load_report, render_categories, render_table
    from ragline.evaluation.settings import EvalSettings
    from ragline.platform.private import private_platform

    dataset = load_beir(
        args.scifact, split="train", tenant="scifact", groups=("eval",), limit_queries=args.limit
    )
    progress = not args.no_progress
    # before the run: a wrong path fails now, not after an hour of ingest
    baseline = load_report(args.baseline) if args.baseline else None
    print(f"SciFact train: {len(dataset.documents)} documents, {len(dataset.cases)} queries")
    async with private_platform(query_env=QUERY_ENV) as plat:
        es = EvalSettings(
            query_url=plat.query_url,
            jwt_secret=SecretStr(plat.jwt_secret),
            top_k=100,
            concurrency=2,
            ingest_timeout_s=args.ingest_timeout,
            poll_interval_s=2.0,
        )
        t0 = time.perf_counter()
        report = await evaluate(
            dataset,
            settings=plat.settings,
            eval_settings=es,
            modes=args.modes.split(","),
            progress=progress,
            command="python bench/eval_scifact.py " + " ".join(sys.argv[1:]),
        )
        write_outputs(report, args.out, baseline)
        print(render_table(report))
        print(f"\nreport in {args.out} ({time.perf_counter() - t0:.0f} s)")
        if baseline is not None:
            print(f"\n{render_before_after(report, baseline)}\n")
            print(render_changes(compare(report, baseline, ThresholdConfig())))
        if args.save_baseline is not None:
            args.save_baseline.mkdir(parents=True, exist_ok=True)
            print(f"baseline saved: {save_baseline(report, args.save_baseline)}")
        if args.paraphrase:
            import paraphrase_fusion

            pa = paraphrase_fusion.parse_args(["--out", str(args.out / "paraphrase")])
            print(await paraphrase_fusion.run(pa))
        if args.hold:
            await _hold(plat, es, dataset, args.out, report, progress)
        if not args.tune:
            return 0
        steps: list[dict[str, Any]] = [
            {"step": "defaults", "env": {}, "hybrid": _row(report, "hybrid")}
        ]
        for name, env in TUNING_STEPS:
            steps.append(await _step(plat, es, dataset, name, env, progress))
        # greedy: the best value of every knob that helped nDCG@10 on its own, together
        base = steps[0]["hybrid"]["ndcg@10"] or 0.0
        best: dict[str, tuple[float, str]] = {}  # knob -> (gain, value)
        for step in steps[1:]:
            ((knob, value),) = step["env"].items()
            gain = (step["hybrid"]["ndcg@10"] or 0.0) - base
            if gain > 0.002 and gain > best.get(knob, (0.0, ""))[0]:
                best[knob] = (gain, value)
        if len(best) > 1:
            env = {k: v for k, (_, v) in best.items()}
            steps.append(await _step(plat, es, dataset, "combined", env, progress))
        if baseline is not None:
            steps.insert(0, _baseline_step(baseline))
        (args.out / "tuning.json").write_text(json.dumps(steps, indent=2))
        (args.out / "tuning.md").write_text(_tuning_md(steps))
        print(_tuning_md(steps))
        print(render_categories(report, "ndcg@10"))
    return 0


def main(argv: list[str]) -> int:
    from _paths import scifact

    from ragline.errors import ConfigError, RaglineError

    args = _args(argv)  # first: --help needs no dataset
    args.scifact = scifact()  # or say where to get the public archive (exit 2)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        return asyncio.run(_run(args))
    except ConfigError as exc:
        print(f"eval-scifact: {exc}", file=sys.stderr)
        return 2
    except RaglineError as exc:
        print(f"eval-scifact: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
