"""Keep an ingested answerability benchmark on a private platform, for fitting and
measuring the answerability model without re-ingesting (the ingest is the long pole).

Starts a private platform, ingests ``answerability:<SciFact>`` (evaluation/answerability.py)
through the real pipeline, writes ``OUT/platform.json`` (the query service URL and its
JWT secret), then serves until ``OUT/stop`` exists. Writing ``OUT/restart.json``
(``{"env": {...}}``) restarts only the query service with the code on disk and that env;
``platform.json`` then names the new URL. Query it with
``RAGLINE_EVAL_QUERY_URL=... RAGLINE_EVAL_JWT_SECRET=... ragline eval --dataset
answerability:<dir> --no-ingest --modes hybrid`` (bench/fit_answerability.py does).

    .venv/bin/python bench/answerability_stack.py [--out bench/out/answerability]
        [--dataset golden:tests/golden ...]   # other datasets instead (the golden check)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from eval_scifact import QUERY_ENV

ROOT = Path(__file__).resolve().parent.parent


async def _run(out: Path, timeout_s: float, specs: list[str]) -> int:
    from _paths import scifact

    from ragline.evaluation.client import QueryClient
    from ragline.evaluation.datasets import load_dataset
    from ragline.evaluation.evaluate import wait_ready
    from ragline.evaluation.ingest import ingest_dataset
    from ragline.evaluation.settings import EvalSettings
    from ragline.platform.private import private_platform

    datasets = [load_dataset(s) for s in specs or [f"answerability:{scifact()}"]]
    for d in datasets:
        print(f"{d.name}: {len(d.documents)} documents, {len(d.cases)} cases")
    out.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (small files, once)
    for f in ("stop", "restart.json", "platform.json"):
        (out / f).unlink(missing_ok=True)
    async with private_platform(query_env=QUERY_ENV, keep_dir=True) as plat:
        t0 = time.perf_counter()
        results = [
            await ingest_dataset(
                d, plat.settings, timeout_s=timeout_s, poll_interval_s=2.0, drain=("indexer",)
            )
            for d in datasets
        ]
        for res in results:
            print(f"ingested: {res.as_dict()} in {time.perf_counter() - t0:.0f} s", flush=True)

        def publish() -> None:
            (out / "platform.json").write_text(
                json.dumps(
                    {
                        "query_url": plat.query_url,
                        "jwt_secret": plat.jwt_secret,
                        "logs": str(plat.log_dir),
                        "ingest": [r.as_dict() for r in results],
                    }
                )
            )

        publish()
        while not (out / "stop").exists():
            req = out / "restart.json"
            if req.exists():
                env = dict(json.loads(req.read_text()).get("env", {}))
                req.unlink()
                url = await plat.restart_query({**QUERY_ENV, **env})
                es = EvalSettings(query_url=url)
                async with QueryClient(es) as client:
                    await wait_ready(client, timeout_s=300)
                publish()
                print(f"query service restarted at {url} with {env}", flush=True)
            await asyncio.sleep(2)
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "answerability")
    p.add_argument("--ingest-timeout", type=float, default=7200.0)
    p.add_argument(
        "--dataset",
        action="append",
        default=[],
        help="what to ingest (ragline eval's specs, repeatable); default the answerability "
        "benchmark over SciFact",
    )
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return asyncio.run(_run(args.out, args.ingest_timeout, args.dataset))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
