"""``make bench``: every benchmark in one command, side by side, with a summary.

Each benchmark is its own script (runnable alone) that writes JSON under bench/out/;
this runner runs them in sequence with their own progress output, then writes
bench/out/summary.json and bench/out/summary.md (the README table) with the date, the
machine and the exact command. ``--quick`` runs every script's own smoke mode (its
``--quick``: tiny inputs; a benchmark that needs SciFact is skipped when it is missing):
``.ci/run`` runs it so no benchmark rots unnoticed.

    .venv/bin/python bench/run_all.py [--quick] [--only pipeline,query]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _paths import SKIPPED

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"

# name -> (script, args, json report). ``--quick`` adds ``--quick`` to a script's args:
# each script declares its own smoke run (tiny inputs; ``_paths.add_quick``), and one
# that lacks an optional input (SciFact) exits ``SKIPPED`` (reported, not failed).
BENCHES: dict[str, tuple[str, list[str], str]] = {
    "parse": ("parse_bench.py", [], "parse.json"),
    "chunk": ("chunk_bench.py", ["--json", "bench/out/chunk_bench.json"], "chunk_bench.json"),
    "scan": ("scan_bench.py", [], "scan.json"),
    "scan_adversarial": ("scan_adversarial.py", [], "scan_adversarial.json"),
    "connector": ("connector_intake.py", [], "connector.json"),
    "index": ("index_bench.py", [], "index.json"),
    # whole pipeline vs the embedder alone, once per embedder backend
    "pipeline": ("pipeline_bench.py", ["--backend", "torch"], "pipeline.json"),
    **{
        f"pipeline_{b.replace('-', '_')}": (
            "pipeline_bench.py",
            ["--backend", b, "--json", f"bench/out/pipeline_{b}.json"],
            f"pipeline_{b}.json",
        )
        for b in ("onnx", "onnx-int8")
    },
    # the same with the embedder on a core of its own, the rest on the other, on the
    # whole SciFact corpus (5,183 abstracts: a re-embed's steady state, the fill of the
    # first ~15 s amortised; issue 35, docs/benchmarks.md session 8). ~12 minutes
    "pipeline_onnx_int8_own_core": (
        "pipeline_bench.py",
        [
            "--backend",
            "onnx-int8",
            "--own-core",
            "--docs",
            "5183",
            "--probes",
            "0",
            "--json",
            "bench/out/pipeline_own_core.json",
        ],
        "pipeline_own_core.json",
    ),
    # a 10,000-child document in slices, embedder SIGKILLed mid-document (issue 35)
    "slices": ("slices_bench.py", [], "slices.json"),
    # texts per model call x intra-op threads on real chunks (issue 35)
    "batching": ("batching_bench.py", [], "batching.json"),
    # torch vs onnx vs onnx-int8: chunks/s, cosine, nDCG@10 on SciFact (docs/benchmarks.md)
    "embedder": ("embedder_bench.py", [], "embedder.json"),
    # issue 35: today's dynamic int8 one text per call vs static int8 batched vs fp32
    # batched, side by side in one process: chunks/s on real chunks, nDCG@10, independence
    "quant": ("quant_bench.py", [], "quant.json"),
    "freshness": ("freshness_bench.py", [], "freshness.json"),
    "query": ("query_bench.py", [], "query/report.json"),
    "cache": ("cache_bench.py", [], "cache.json"),
    "growth": ("growth_bench.py", [], "growth.json"),
}


def machine() -> dict[str, Any]:
    mem_gib = None
    try:
        with open("/proc/meminfo") as fh:
            kib = int(fh.readline().split()[1])
            mem_gib = round(kib / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return {
        "cores": os.cpu_count(),
        "mem_gib": mem_gib,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_one(name: str, quick: bool) -> dict[str, Any]:
    script, args, report = BENCHES[name]
    path = REPO / "bench" / script
    if not path.exists():
        return {"status": "missing", "script": script}
    cmd = [sys.executable, str(path), *args, *(["--quick"] if quick else [])]
    print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
    t0, cpu0 = time.perf_counter(), _children_cpu_s()
    rc = subprocess.call(cmd, cwd=REPO)
    took, cpu = time.perf_counter() - t0, _children_cpu_s() - cpu0
    status = {0: "ok", SKIPPED: "skipped"}.get(rc, f"failed rc={rc}")
    result: dict[str, Any] = {
        "status": status,
        "seconds": round(took, 1),
        # CPU of the script and the services it ran (load-independent, unlike seconds;
        # JVMs a stack detached are not counted)
        "cpu_seconds": round(cpu, 1),
        "command": " ".join(cmd[1:]),
    }
    rp = OUT / report
    if rc == 0 and rp.exists():
        result["report"] = json.loads(rp.read_text())
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated subset of " + ",".join(BENCHES))
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    names = [n for n in (args.only.split(",") if args.only else BENCHES) if n]
    summary: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join(["make bench", *(["--quick"] if args.quick else [])]),
        "results": {n: run_one(n, args.quick) for n in names},
    }
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2))
    lines = [
        f"Benchmarks of {summary['date']} on {summary['machine']['cores']} cores, "
        f"{summary['machine']['mem_gib']} GiB (`{summary['command']}`)",
        "",
        "| benchmark | status | seconds | CPU seconds |",
        "|---|---|---|---|",
    ]
    for n, r in summary["results"].items():
        lines.append(
            f"| {n} | {r['status']} | {r.get('seconds', '-')} | {r.get('cpu_seconds', '-')} |"
        )
    ratios = [
        (
            r["report"].get("embedder_backend", "torch")
            + (", own core" if r["report"].get("embedder_cpus") else ""),
            r["report"],
        )
        for n, r in summary["results"].items()
        if n.startswith("pipeline") and isinstance(r.get("report"), dict)
    ]
    if ratios:  # whole pipeline vs the embedder alone, per embedder backend
        lines += [
            "",
            "| embedder backend | pipeline chunks/s | embedder alone chunks/s | ratio"
            " | embedder handler busy |",
        ]
        lines.append("|---|---|---|---|---|")
        for backend, rep in ratios:
            pipe = rep.get("pipeline", {}).get("chunks_per_s")
            alone = rep.get("embedder_alone", {}).get("chunks_per_s")
            ratio = rep.get("ratio_pipeline_to_embedder")
            busy = rep.get("embedder_busy_share", float("nan"))
            if pipe and alone and ratio:
                lines.append(f"| {backend} | {pipe:.1f} | {alone:.1f} | {ratio:.2f} | {busy:.0%} |")
        for backend, rep in ratios:  # where the pipeline's CPU went (pipeline_bench.py)
            stages = rep.get("per_stage") or {}
            if stages:
                shares = sorted(stages.items(), key=lambda kv: -kv[1].get("cpu_share", 0))
                lines.append(
                    f"\nCPU share per service ({backend}): "
                    + ", ".join(f"{n} {v.get('cpu_share', 0):.0%}" for n, v in shares)
                )
    quant = summary["results"].get("quant", {}).get("report")
    if isinstance(quant, dict):  # issue 35: the int8 variants, one run, one machine
        lines += ["", "| embedder variant | chunks/s | x before | nDCG@10 | vs fp32 |"]
        lines.append("|---|---|---|---|---|")
        for rv in quant["variants"].values():
            lines.append(
                f"| {rv.get('label', rv['backend'])} | {rv['chunks_per_s']:.1f} "
                f"| {rv['ratio_vs_dynamic']:.2f} "
                f"| {rv['scifact_train_dense']['ndcg@10']:.4f} | {rv['ndcg_delta_vs_fp32']:+.4f} |"
            )
    (OUT / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    took = sum(r.get("seconds", 0) for r in summary["results"].values())
    cpu = sum(r.get("cpu_seconds", 0) for r in summary["results"].values())
    print(
        f"\n{len(names)} benchmarks in {took:.0f} s ({cpu:.0f} CPU-s), "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    return 0 if all(r["status"] in ("ok", "skipped") for r in summary["results"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
