"""Retrieval tuning against ONE kept private stack (issue 20).

``serve`` starts a private platform, ingests SciFact train and the golden set once, writes
how to reach it to ``bench/out/tune/stack.json`` and keeps it up until interrupted.
The other steps run against that stack: query-time variants only, no re-ingest.

    .venv/bin/python bench/tune_retrieval.py serve
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = Path(os.environ.get("RAGLINE_SCIFACT_DIR", ROOT.parent / "shared" / "eval" / "scifact"))
GOLDEN = ROOT / "tests" / "golden"
OUT = ROOT / "bench" / "out" / "tune"
QUERY_ENV = {
    "RAGLINE_QUERY_MAX_TOP_K": "100",
    "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
    "OMP_NUM_THREADS": "1",
    "RAGLINE_CACHE_ENABLED": "false",
}


async def _serve(args: argparse.Namespace) -> int:
    from ragline.evaluation.datasets import load_beir
    from ragline.evaluation.golden import load_golden
    from ragline.evaluation.ingest import ingest_dataset
    from ragline.evaluation.platform import private_platform

    datasets = [load_golden(GOLDEN)]
    if not args.golden_only:
        datasets.append(load_beir(SCIFACT, split="train", tenant="scifact", groups=("eval",)))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with private_platform(query_env=QUERY_ENV, keep_dir=True) as plat:
        for ds in datasets:
            res = await ingest_dataset(
                ds,
                plat.settings,
                timeout_s=7200,
                poll_interval_s=2.0,
                progress=False,
                drain=("indexer",),
            )
            print(f"ingested {ds.name}: {res.as_dict()}", flush=True)
        state = {
            "env": {k: v for k, v in os.environ.items() if k.startswith("RAGLINE_")},
            "query_url": plat.query_url,
            "jwt_secret": plat.jwt_secret,
            "log_dir": str(plat.log_dir),
            "pid": os.getpid(),
        }
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "stack.json").write_text(json.dumps(state, indent=2))
        print(f"stack ready: {OUT / 'stack.json'}", flush=True)
        await stop.wait()
    return 0


def main(argv: list[str]) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="start + ingest once, keep the stack up")
    s.add_argument("--golden-only", action="store_true")
    args = p.parse_args(argv)
    if args.cmd == "serve":
        return asyncio.run(_serve(args))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
