"""Embedding spaces, measured on a private stack (docs/indexing.md "Embedding spaces"):

* the embedder's normal rate (the model on the event path's texts, batches of 64) vs the
  backfill rate of a shadow space that needs the model (recipe ``plain``) and of one
  derived from the stored vectors (``truncate_dim=256``);
* query latency (dense, in-process query app, cache off, 2 clients in a steady loop)
  before, during the backfill, during repeated flips (promote/rollback) and after, with
  the error count and whether any response mixed spaces;
* the gate's numbers: dense nDCG@10 / recall@10 per space on the SciFact subset
  (``run_modes`` + ``gate_reports``, the promote gate's own code, over the app).

``nice -n 10 .venv/bin/python bench/spaces_bench.py --queries 100 --docs 300`` writes
bench/out/spaces.json. SciFact from ``RAGLINE_SCIFACT_DIR`` or ../shared/eval/scifact.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration" / "spaces"))

from spaces_helpers import SCIFACT, pack, scifact_subset, seed_docs  # noqa: E402

from ragline.config import Settings  # noqa: E402
from ragline.embedding.backfill import backfill_space  # noqa: E402
from ragline.embedding.model import SentenceTransformerEmbedder  # noqa: E402
from ragline.embedding.texts import embed_text  # noqa: E402
from ragline.evaluation.client import QueryClient  # noqa: E402
from ragline.evaluation.datasets import load_dataset  # noqa: E402
from ragline.evaluation.gate import Threshold, ThresholdConfig  # noqa: E402
from ragline.evaluation.report import build_report  # noqa: E402
from ragline.evaluation.runner import run_modes  # noqa: E402
from ragline.evaluation.settings import EvalSettings  # noqa: E402
from ragline.evaluation.space_gate import gate_reports  # noqa: E402
from ragline.indexing.samples import enriched_event  # noqa: E402
from ragline.platform.stack import StackManager, StackSettings  # noqa: E402
from ragline.platform.stack.testing import patched_environ, stack_env  # noqa: E402
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder  # noqa: E402
from ragline.retrieval.settings import QuerySettings  # noqa: E402
from ragline.store.pool import open_pool  # noqa: E402
from ragline.store.spaces import create_space, promote  # noqa: E402
from services.query.api import create_app  # noqa: E402

SECRET = secrets.token_hex(24)  # this run's own credentials
ADMIN = secrets.token_hex(16)


def pct(xs: list[float], q: float) -> float | None:
    return round(float(np.percentile(xs, q)), 1) if xs else None


class Load:
    """Two clients querying in a loop; latencies and errors per phase."""

    def __init__(self, client: httpx.AsyncClient, queries: list[str], tenant: str) -> None:
        self.client = client
        self.queries = queries
        claims = {"sub": "bench", "tenant": tenant, "groups": ["eval"], "exp": time.time() + 7200}
        self.headers = {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}
        self.phase = "before"
        self.lat: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.stop = asyncio.Event()
        self.i = 0

    async def worker(self) -> None:
        while not self.stop.is_set():
            q = self.queries[self.i % len(self.queries)]
            self.i += 1
            phase = self.phase
            t0 = time.perf_counter()
            try:
                r = await self.client.post(
                    "/v1/search",
                    json={"query": q, "mode": "dense", "top_k": 10, "rerank": False},
                    headers=self.headers,
                )
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            ms = (time.perf_counter() - t0) * 1000
            if ok:
                self.lat.setdefault(phase, []).append(ms)
            else:
                self.errors[phase] = self.errors.get(phase, 0) + 1

    def summary(self) -> dict[str, Any]:
        return {
            p: {
                "n": len(self.lat.get(p, [])),
                "p50_ms": pct(self.lat.get(p, []), 50),
                "p95_ms": pct(self.lat.get(p, []), 95),
                "errors": self.errors.get(p, 0),
            }
            for p in ("before", "backfill", "flips", "after")
        }


async def bench(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    model = SentenceTransformerEmbedder()
    data = Path(tempfile.mkdtemp(prefix="spaces-bench-")) / "scisub"
    corpus = scifact_subset(SCIFACT, data, queries=args.queries, distractors=args.docs)
    docs = [(f"scisub:{r['_id']}", r.get("title") or "", pack(r.get("text") or "")) for r in corpus]
    report: dict[str, Any] = {"docs": len(docs)}

    # the embedder's normal rate: the model on the event path's texts, batches of 64
    texts = []
    for doc_id, title, kids in docs:
        ev = enriched_event(
            tenant_id="eval", document_id=doc_id, source_seq=1, texts=list(kids), title=title
        )
        texts.extend(embed_text(c) for c in ev.chunks if c.level.value == "child")
    sample = texts[: args.rate_sample]
    t0 = time.perf_counter()
    for i in range(0, len(sample), 64):
        model.encode(sample[i : i + 64])
    report["embedder_model_rate_chunks_s"] = round(len(sample) / (time.perf_counter() - t0), 1)
    report["children"] = len(texts)

    pool = await open_pool(settings.admin_dsn(), name="spaces-bench", max_size=4)
    await seed_docs(pool, model, "eval", docs, groups=("eval",))
    spaces = {}
    async with pool.connection() as conn:
        for name, trunc, recipe in (
            ("t256", 256, "header"),
            ("t64", 64, "header"),
            ("plain", None, "plain"),
        ):
            spaces[name] = await create_space(
                conn,
                name=name,
                model=model.name,
                revision=model.revision,
                dim=trunc or model.dim,
                truncate_dim=trunc,
                normalize=True,
                recipe=recipe,
                actor="bench",
            )

    qs = QuerySettings.from_fields(
        jwt_secret=SECRET, rate_limit_per_minute=0, space_admin_key=ADMIN, max_top_k=100
    )
    inner = ModelQueryEmbedder(model)
    app = create_app(settings, qs, embedder=CachedEmbedder(inner, size=4096))
    queries = [json.loads(x)["text"] for x in (data / "queries.jsonl").open()]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://q", timeout=60) as c:
            load = Load(c, queries, "eval")
            workers = [asyncio.create_task(load.worker()) for _ in range(2)]
            await asyncio.sleep(args.phase_s)
            rates = {}
            load.phase = "backfill"
            for name in ("t256", "t64", "plain"):
                st = await backfill_space(pool, spaces[name], model, batch_size=64)
                rates[name] = {
                    "chunks_per_s": round(st.rate, 1),
                    "computed_by_model": st.computed,
                    "derived": st.derived,
                    "cached": st.cached,
                    "elapsed_s": round(st.elapsed_s, 1),
                }
            report["backfill"] = rates
            load.phase = "flips"
            for i in range(args.flips):
                async with pool.connection() as conn:
                    if i % 2 == 0:
                        await promote(conn, "plain", actor="bench", forced=True)
                    else:
                        await promote(
                            conn, "primary", actor="bench", action="rollback", forced=True
                        )
                await asyncio.sleep(args.phase_s / args.flips)
            load.phase = "after"
            await asyncio.sleep(args.phase_s)
            load.stop.set()
            await asyncio.gather(*workers)
            report["query_latency_dense"] = load.summary()

            # the gate's numbers, per space, dense mode, over the same app
            dataset = load_dataset(f"beir:{data}", split="test")
            es = EvalSettings(jwt_secret=SECRET, space_admin_key=ADMIN, top_k=100)
            reports = {}
            for name in ("primary", "t256", "t64", "plain"):
                async with QueryClient(
                    es.model_copy(update={"space": name}), base_url="http://q", transport=transport
                ) as qc:
                    runs = await run_modes(
                        qc, dataset, ["dense"], top_k=100, concurrency=2, warmup=1, progress=False
                    )
                reports[name] = build_report(dataset, runs, top_k=100, concurrency=2)
    inner.close()
    await pool.close()
    config = ThresholdConfig(
        thresholds=tuple(Threshold(metric=m, max_drop=0.02) for m in ("ndcg@10", "recall@10"))
    )
    live = reports["primary"]
    report["gate_dense"] = {
        name: {
            "ndcg@10": r.value("dense", "ndcg@10"),
            "recall@10": r.value("dense", "recall@10"),
            "mrr": r.value("dense", "mrr"),
            "verdict": "baseline"
            if name == "primary"
            else ("refuse" if gate_reports(r, live, config) else "promote"),
        }
        for name, r in reports.items()
    }
    report["gate_thresholds"] = (
        "max_drop 0.02 on ndcg@10 and recall@10, forbidden_hits/error_rate 0"
    )
    report["cases"] = len(dataset.cases)
    return report


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=100, help="judged SciFact queries")
    parser.add_argument("--docs", type=int, default=300, help="distractor abstracts")
    parser.add_argument("--phase-s", type=float, default=20.0, help="seconds per load phase")
    parser.add_argument("--flips", type=int, default=10)
    parser.add_argument("--rate-sample", type=int, default=256, help="texts for the model rate")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with (
        tempfile.TemporaryDirectory(prefix="ragline-spaces-bench-") as tmp,
        patched_environ(stack_env(Path(tmp) / "state")),
    ):
        settings = Settings()
        manager = StackManager(settings, StackSettings(), detached=False)
        await manager.up()
        try:
            t0 = time.perf_counter()
            report = {
                "machine": {
                    "cpus": os.cpu_count(),
                    "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
                },
                **await bench(settings, args),
            }
            report["wall_s"] = round(time.perf_counter() - t0, 1)
            report["machine"]["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
        finally:
            await manager.down()
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "spaces.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
