"""Query service latency: p50/p95/p99 at 1, 4 and 16 concurrent clients for lexical,
dense and hybrid (and hybrid+rerank when a CrossEncoder directory is given), on SciFact
and on a synthetic corpus, plus the service's overhead: its total time as a ratio of the
sum of its backend calls (embedding, Postgres, OpenSearch, rerank), in the same run.

It starts a private stack on free ports, writes the corpora the way the indexer does
(IndexWriter + OsSyncer; SciFact with real all-MiniLM-L6-v2 vectors, the synthetic
corpus with random unit vectors and Zipf-distributed words), starts ``ragline run query``
as its own process and drives it over HTTP. Writes bench/out/query/report.{json,md,png}.

    .venv/bin/python bench/query_bench.py [--corpora scifact,synthetic]
        [--synthetic-chunks 100000] [--clients 1,4,16] [--requests 120]
        [--modes lexical,dense,hybrid] [--rerank-model DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import numpy as np
from _bulkload import GROUP, Doc, build_hnsw, drop_hnsw, load_docs
from _paths import add_quick
from _synthetic import CHUNKS_PER_DOC, synthetic_docs, synthetic_queries

ROOT = Path(__file__).resolve().parent.parent
SECRET = "query-bench-secret-0123456789abcdef0123"  # noqa: S105 - throw-away stack


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpora", default="scifact,synthetic")
    p.add_argument("--synthetic-chunks", type=int, default=100_000)
    p.add_argument("--clients", default="1,4,16")
    p.add_argument("--requests", type=int, default=120, help="requests per (corpus, mode, c)")
    p.add_argument("--modes", default="lexical,dense,hybrid")
    p.add_argument("--rerank-model", type=Path, help="local CrossEncoder directory")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "query")
    p.add_argument(
        "--previous", type=Path, help="an earlier report.json: keep its corpora not re-run here"
    )
    add_quick(p)  # here: the synthetic corpus only (1,000 chunks), 10 requests, 2 clients
    a = p.parse_args(argv)
    if a.quick:  # SciFact needs every abstract embedded first: minutes, not seconds
        a.corpora, a.synthetic_chunks, a.requests, a.clients = "synthetic", 1000, 10, "2"
    return a


def retrieval_env() -> dict[str, str]:
    """The query service's environment for measuring retrieval itself: every request
    embeds (no query-embedding cache), never abstains, no rate limit, no answer cache
    (bench/cache_bench.py measures that)."""
    return {
        **os.environ,
        "RAGLINE_QUERY_JWT_SECRET": SECRET,
        "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
        "RAGLINE_QUERY_EMBEDDING_CACHE_SIZE": "0",
        "RAGLINE_QUERY_ABSTAIN_MIN_SIMILARITY": "-1",
        "RAGLINE_QUERY_POOL_MAX_SIZE": "20",
        "RAGLINE_CACHE_ENABLED": "false",
    }


# ----------------------------------------------------------------------------- corpora


def _scifact() -> tuple[list[tuple[str, str, str]], list[str]]:
    from _paths import scifact

    folder = scifact()  # or say where to get it
    docs = []
    with (folder / "corpus.jsonl").open() as f:
        for line in f:
            d = json.loads(line)
            docs.append((f"scifact:{d['_id']}", d.get("title") or "", d.get("text") or ""))
    queries = []
    with (folder / "queries.jsonl").open() as f:
        for line in f:
            queries.append(json.loads(line)["text"])
    return docs, queries


async def seed_scifact(settings: Any) -> tuple[list[str], dict[str, Any]]:
    from ragline.embedding.model import SentenceTransformerEmbedder

    docs, queries = _scifact()
    import torch

    # one intra-op thread: on a busy 2-core machine two spinning threads are ~10x slower
    torch.set_num_threads(1)
    model = await asyncio.to_thread(SentenceTransformerEmbedder)
    texts = [f"{t}. {x}"[:1500] for _, t, x in docs]
    t0 = time.perf_counter()
    vecs = await asyncio.to_thread(model.encode, texts)
    embed_s = time.perf_counter() - t0
    items = [(d, t or d, [texts[i]], vecs[i : i + 1]) for i, (d, t, _) in enumerate(docs)]
    info = await bulk_seed(settings, "scifact", items)
    return queries, {**info, "embed_s": round(embed_s, 1)}


async def bulk_seed(settings: Any, tenant: str, docs: list[Doc]) -> dict[str, Any]:
    """COPY + one HNSW build + OpenSearch bulk, rows shaped like the indexer's
    (bench/_bulkload.py); what is measured here is the query side."""
    await asyncio.to_thread(drop_hnsw, settings)
    info = await load_docs(settings, tenant, docs, total_chunks=sum(len(d[2]) for d in docs))
    print(f"  {tenant}: loaded {info}; HNSW build", flush=True)
    return {**info, **await asyncio.to_thread(build_hnsw, settings)}


async def seed_synthetic(settings: Any, n_chunks: int) -> tuple[list[str], dict[str, Any]]:
    rng = np.random.default_rng(7)
    docs = list(synthetic_docs(rng, n_chunks // CHUNKS_PER_DOC))
    info = await bulk_seed(settings, "synth", docs)
    return synthetic_queries(rng), info


# ----------------------------------------------------------------------------- load


def _pct(xs: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(xs), q)), 2) if xs else float("nan")


async def run_load(
    url: str,
    tenant: str,
    queries: list[str],
    mode: str,
    rerank: bool,
    clients: int,
    n: int,
    offset: int = 0,
) -> dict[str, Any]:
    token = jwt.encode(
        {"sub": "bench", "tenant": tenant, "groups": [GROUP], "exp": time.time() + 86400},
        SECRET,
        algorithm="HS256",
    )
    headers = {"Authorization": f"Bearer {token}"}
    lat: list[float] = []
    ratios: list[float] = []
    client_ratios: list[float] = []
    stages: dict[str, list[float]] = {}
    errors = 0
    counter = iter(range(n))

    async def worker(c: httpx.AsyncClient) -> None:
        nonlocal errors
        for i in counter:
            body = {
                "query": queries[(offset + i) % len(queries)],
                "top_k": 10,
                "mode": mode,
                "rerank": rerank,
            }
            t0 = time.perf_counter()
            r = await c.post("/v1/search", json=body, headers=headers)
            ms = (time.perf_counter() - t0) * 1000
            if r.status_code != 200:
                errors += 1
                continue
            t = r.json()["timings_ms"]
            lat.append(ms)
            for k, v in t.items():
                stages.setdefault(k, []).append(v)
            if t.get("backend"):
                ratios.append(t["total"] / t["backend"])
                client_ratios.append(ms / t["backend"])

    limits = httpx.Limits(max_connections=clients + 2)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as c:
        for q in queries[:5]:  # warm-up
            await c.post("/v1/search", json={"query": q, "mode": mode}, headers=headers)
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(c) for _ in range(clients)))
        wall = time.perf_counter() - t0
    return {
        "mode": mode + ("+rerank" if rerank else ""),
        "clients": clients,
        "requests": n,
        "errors": errors,
        "p50_ms": _pct(lat, 50),
        "p95_ms": _pct(lat, 95),
        "p99_ms": _pct(lat, 99),
        "throughput_rps": round(len(lat) / wall, 1),
        # the service's own per-stage timer (e.g. ``lexical``: the OpenSearch request)
        "stages_ms": {k: {"p50": _pct(v, 50), "p95": _pct(v, 95)} for k, v in stages.items()},
        "overhead_ratio_server": round(float(np.median(ratios)), 3) if ratios else None,
        "overhead_ratio_client": round(float(np.median(client_ratios)), 3)
        if client_ratios
        else None,
    }


# ----------------------------------------------------------------------------- report


def write_report(out: Path, report: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2))
    lines = [
        "| corpus | mode | clients | p50 ms | p95 ms | p99 ms | req/s | overhead (server) |"
        " overhead (client) | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus, rows in report["results"].items():
        for r in rows:
            lines.append(
                f"| {corpus} | {r['mode']} | {r['clients']} | {r['p50_ms']} | {r['p95_ms']} |"
                f" {r['p99_ms']} | {r['throughput_rps']} | {r['overhead_ratio_server']} |"
                f" {r['overhead_ratio_client']} | {r['errors']} |"
            )
    (out / "report.md").write_text("\n".join(lines) + "\n")
    corpora = list(report["results"])
    fig, axes = plt.subplots(1, len(corpora), figsize=(6 * len(corpora), 4), squeeze=False)
    for ax, corpus in zip(axes[0], corpora, strict=True):
        rows = report["results"][corpus]
        for mode in dict.fromkeys(r["mode"] for r in rows):
            rs = [r for r in rows if r["mode"] == mode]
            cs = [r["clients"] for r in rs]
            ax.plot(cs, [r["p50_ms"] for r in rs], marker="o", label=f"{mode} p50")
            ax.plot(cs, [r["p95_ms"] for r in rs], marker="x", linestyle="--", label=f"{mode} p95")
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 4, 16], ["1", "4", "16"])
        ax.set_xlabel("concurrent clients")
        ax.set_ylabel("latency (ms)")
        ax.set_title(f"{corpus} ({report['corpora'][corpus]['chunks']} chunks)")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=110)


async def main(argv: list[str]) -> int:
    a = _args(argv)
    sys.path.insert(0, str(ROOT))
    from ragline.config import Settings
    from ragline.platform.stack import StackManager, StackSettings
    from ragline.platform.stack.testing import (
        CLEARED_ENV,
        ServiceProcess,
        free_port,
        patched_environ,
        stack_env,
    )

    corpora = [c for c in a.corpora.split(",") if c]
    modes = [m for m in a.modes.split(",") if m]
    clients = [int(c) for c in a.clients.split(",")]
    base = Path(tempfile.mkdtemp(prefix="query-bench-"))
    env = stack_env(base / "state")
    report: dict[str, Any] = {"corpora": {}, "results": {}, "load_avg_start": os.getloadavg()}
    with patched_environ(env, remove=CLEARED_ENV):
        settings = Settings()
        manager = StackManager(settings, StackSettings(), detached=False)
        await manager.up()
        proc = None
        try:
            qsets: dict[str, list[str]] = {}
            for corpus in corpora:
                print(f"seeding {corpus} ...", flush=True)
                if corpus == "scifact":
                    qsets[corpus], info = await seed_scifact(settings)
                else:
                    qsets[corpus], info = await seed_synthetic(settings, a.synthetic_chunks)
                report["corpora"][corpus] = info
                print(f"  {info}", flush=True)
            qenv = retrieval_env()
            if a.rerank_model:
                qenv["RAGLINE_QUERY_RERANK_MODEL_PATH"] = str(a.rerank_model)
            proc = ServiceProcess(
                "query",
                env=qenv,
                log_path=base / "query.log",
                metrics_port=free_port(),
                http_port=free_port(),
                cwd=ROOT,
            )
            await proc.wait_ready_async()
            runs = [(m, False) for m in modes] + ([("hybrid", True)] if a.rerank_model else [])
            for corpus in corpora:
                rows = []
                offset = 0  # fresh queries for every run: no run sees another's repeats
                for mode, rr in runs:
                    for n_clients in clients:
                        n = max(a.requests, 2 * n_clients)
                        r = await run_load(
                            proc.http_url,
                            "scifact" if corpus == "scifact" else "synth",
                            qsets[corpus],
                            mode,
                            rr,
                            n_clients,
                            n,
                            offset,
                        )
                        offset += n
                        print(f"  {corpus} {r}", flush=True)
                        rows.append(r)
                report["results"][corpus] = rows
        finally:
            if proc is not None:
                proc.cleanup()
            try:
                await manager.down()
            except Exception as exc:  # a slow server exit must not lose the results
                print(f"stack down failed: {type(exc).__name__}: {exc}", flush=True)
    report["load_avg_end"] = os.getloadavg()
    if a.previous is not None and a.previous.is_file():
        prev = json.loads(a.previous.read_text())
        for corpus, rows in prev.get("results", {}).items():
            if corpus not in report["results"]:
                report["results"][corpus] = rows
                report["corpora"][corpus] = prev["corpora"][corpus]
    report["rerank"] = "measured" if a.rerank_model else "not measured: no CrossEncoder mounted"
    write_report(a.out, report)
    print((a.out / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
