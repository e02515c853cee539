"""Cost growth: how ingest time, query latency and index size grow with the corpus.

On a private stack (temp dir, free ports, stopped afterwards; a real OpenSearch 2.19.6
node and PostgreSQL + pgvector) it grows one tenant's corpus in steps up to each size,
two ways (``--load``):

- ``direct`` (``make bench-growth``): SYNTHETIC chunks written straight into both stores
  (bench/_bulkload.py: Postgres rows shaped like the indexer's by COPY, the HNSW index
  rebuilt once per step; OpenSearch through the store's own ``bulk_index``). No embedder
  runs: vectors are random unit vectors; the text is SciFact-derived (``--text scifact``,
  windows of SciFact abstracts; queries are SciFact's train claims) or Zipf-distributed
  made-up words (``--text zipf``). This is how 1M chunks load in minutes, not hours.
- ``indexer``: through the indexer's production write path, ``IndexerStage.handle_batch``
  on batches of ``doc.embedded`` events (what ``ragline run indexer`` does per consumed
  batch: one Postgres transaction per document into the live HNSW index, then one
  OpenSearch projection per batch); synthetic Zipf text.

After each step it measures query latency p50/p95/p99 per mode at 4 concurrent clients
against a real ``ragline run query`` process over HTTP (bench/query_bench.py's client),
the OpenSearch node's RSS and the index sizes on disk (the OpenSearch index's store, the
Postgres ``chunks`` table with its indexes and the HNSW index alone). It reports the load
rates of each step and growth ratios (the largest size over the smallest and per step).
Writes bench/out/growth.{json,png} after every step (a run stopped early keeps its steps).

    .venv/bin/python bench/growth_bench.py [--load direct|indexer] [--text scifact|zipf]
        [--sizes 10000,100000] [--max 1000000] [--requests 120] [--clients 4]
        [--modes lexical,dense,hybrid] [--quick] [--force-merge]

``--quick`` (a smoke run) is ``--load direct --sizes 400,800 --requests 10 --clients 2``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from itertools import islice, pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import psutil
from _bulkload import build_hnsw, drop_hnsw, load_docs
from _paths import OUT, REPO, SCIFACT, add_quick
from _synthetic import (
    CHUNKS_PER_DOC,
    DIM,
    SynthDoc,
    scifact_docs,
    scifact_queries,
    synthetic_docs,
    synthetic_queries,
)
from query_bench import GROUP, retrieval_env, run_load
from tqdm import tqdm

if TYPE_CHECKING:
    from ragline.config import Settings
    from ragline.events import DocEmbedded
    from ragline.indexing.stage import IndexerStage

TENANT = "growth"
INDEX_BATCH = 32  # IndexerStage.batch.max_records: one consumed batch
TAIL = 0.1  # the last 10% of a step: its cost closest to "at that size"
TARGET_LEXICAL_P95_MS = 100.0  # issue 30: lexical p95 at 1M chunks


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--load", choices=("direct", "indexer"), default="indexer")
    p.add_argument("--text", choices=("scifact", "zipf"), default="zipf", help="direct load only")
    p.add_argument("--maintenance-work-mem", default="2GB", help="for the HNSW build (direct)")
    p.add_argument("--sizes", default="10000,100000", help="child chunk counts, ascending")
    p.add_argument("--max", type=int, help="one more, larger size (e.g. 1000000) if memory allows")
    p.add_argument("--requests", type=int, default=120, help="requests per (size, mode)")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--modes", default="lexical,dense,hybrid")
    p.add_argument(
        "--force-merge",
        action="store_true",
        help="after the largest step, force-merge the index to one segment and measure again",
    )
    p.add_argument("--out", type=Path, default=OUT)
    add_quick(p)  # here: --load direct --sizes 400,800 --requests 10 --clients 2
    a = p.parse_args(argv)
    if a.quick:
        a.load, a.sizes, a.requests, a.clients, a.max = "direct", "400,800", 10, 2, None
    return a


def parse_sizes(sizes: str, extra: int | None = None) -> list[int]:
    """Ascending distinct sizes, each rounded down to whole documents (8 children each)."""
    raw = [int(s) for s in sizes.split(",") if s.strip()]
    if extra is not None:
        raw.append(extra)
    out = sorted({s - s % CHUNKS_PER_DOC for s in raw if s >= CHUNKS_PER_DOC})
    if not out:
        raise SystemExit(f"no usable size in {sizes!r} (minimum {CHUNKS_PER_DOC})")
    return out


# ----------------------------------------------------------------------------- pure helpers


def s_per_1k(chunks: int, seconds: float) -> float | None:
    return round(seconds * 1000 / chunks, 3) if chunks > 0 else None


def tail_cost(marks: Sequence[tuple[int, float]], share: float = TAIL) -> float | None:
    """s per 1k chunks over the last ``share`` of a step, from its cumulative
    (chunks, seconds) marks after each batch."""
    if not marks:
        return None
    total_c, total_s = marks[-1]
    start = next((m for m in reversed(marks) if m[0] <= total_c * (1 - share)), (0, 0.0))
    return s_per_1k(total_c - start[0], total_s - start[1])


def ratio(new: float | None, old: float | None) -> float | None:
    return round(new / old, 2) if new is not None and old else None


def _pair(lo: dict[str, Any], hi: dict[str, Any], modes: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "from_chunks": lo["chunks"],
        "to_chunks": hi["chunks"],
        "size_ratio": ratio(hi["chunks"], lo["chunks"]),
    }
    if "ingest" in lo and "ingest" in hi:
        out["ingest_s_per_1k"] = ratio(hi["ingest"]["s_per_1k"], lo["ingest"]["s_per_1k"])
        out["ingest_tail_s_per_1k"] = ratio(
            hi["ingest"]["tail_s_per_1k"], lo["ingest"]["tail_s_per_1k"]
        )
    out["query_p50"], out["query_p95"] = {}, {}
    for m in modes:
        a, b = lo["query"].get(m), hi["query"].get(m)
        if a and b:
            out["query_p50"][m] = ratio(b["p50_ms"], a["p50_ms"])
            out["query_p95"][m] = ratio(b["p95_ms"], a["p95_ms"])
    return out


def growth(steps: Sequence[dict[str, Any]], modes: Sequence[str]) -> dict[str, Any]:
    """The largest measured size over the smallest (ingest s/1k when the indexer loaded,
    p50/p95 per mode), and the same for each step over the one before (``per_step``)."""
    done = [s for s in steps if "query" in s]
    if len(done) < 2:
        return {}
    out = _pair(done[0], done[-1], modes)
    out["per_step"] = [_pair(lo, hi, modes) for lo, hi in pairwise(done)]
    return out


# ----------------------------------------------------------------------------- ingest


def to_event(doc: SynthDoc) -> DocEmbedded:
    """The ``doc.embedded`` the embedder would publish for this document."""
    from ragline.events import ChunkLevel, DocEmbedded
    from ragline.indexing.samples import enriched_event

    doc_id, title, texts, vecs = doc
    ev = enriched_event(
        tenant_id=TENANT,
        document_id=doc_id,
        source_seq=1,
        texts=texts,
        title=title,
        acl_groups=(GROUP,),
    )
    rows = iter(vecs.tolist())
    chunks = tuple(
        c.model_copy(update={"embedding": tuple(next(rows))}) if c.level is ChunkLevel.CHILD else c
        for c in ev.chunks
    )
    return DocEmbedded.model_validate(
        {
            **ev.model_dump(exclude={"event_type", "chunks"}),
            "chunks": chunks,
            "embedding_model": "synthetic-random",
            "embedding_revision": "0",
            "embedding_dim": DIM,
        }
    )


def _batches(docs: Iterator[SynthDoc], n: int) -> Iterator[list[SynthDoc]]:
    it = islice(docs, n)
    while batch := list(islice(it, INDEX_BATCH)):
        yield batch


async def ingest_step(
    stage: IndexerStage, settings: Settings, docs: Iterator[SynthDoc], n_docs: int, label: str
) -> dict[str, Any]:
    """Only ``handle_batch`` is timed: building the events stands in for the consumer's
    deserialization, which is not the indexer's cost."""
    from ragline.runtime.stage import StageContext

    ctx = StageContext(settings=settings, logger=logging.getLogger("growth-bench"))
    marks: list[tuple[int, float]] = []
    chunks, seconds = 0, 0.0
    with tqdm(total=n_docs * CHUNKS_PER_DOC, desc=f"ingest {label}", unit="chunk") as bar:
        for batch in _batches(docs, n_docs):
            events = [to_event(d) for d in batch]
            t0 = time.perf_counter()
            results = await stage.handle_batch(events, ctx)
            seconds += time.perf_counter() - t0
            for r in results:
                if isinstance(r, BaseException):
                    raise r
            n = len(batch) * CHUNKS_PER_DOC
            chunks += n
            marks.append((chunks, seconds))
            bar.update(n)
    return {
        "chunks": chunks,
        "seconds": round(seconds, 2),
        "chunks_per_s": round(chunks / seconds, 1) if seconds > 0 else None,
        "s_per_1k": s_per_1k(chunks, seconds),
        "tail_s_per_1k": tail_cost(marks),
    }


def analyze(settings: Settings) -> float:
    """What autovacuum does after a bulk load, done now so every size is planned on fresh
    statistics (not counted as ingest)."""
    import psycopg

    t0 = time.perf_counter()
    with psycopg.connect(settings.admin_dsn(), autocommit=True) as conn:
        conn.execute("ANALYZE documents")
        conn.execute("ANALYZE chunks")
    return round(time.perf_counter() - t0, 2)


# ----------------------------------------------------------------------------- memory, disk


def cpu_s(pids: Sequence[int | None]) -> float:
    """User + system CPU seconds of these processes and their children so far (Postgres:
    the postmaster's backends)."""
    total = 0.0
    for pid in pids:
        if pid is None:
            continue
        try:
            proc = psutil.Process(pid)
            for p in (proc, *proc.children(recursive=True)):
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.Error:
            continue
    return total


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        rss: int = psutil.Process(pid).memory_info().rss
        return round(rss / 2**20, 1)
    except psutil.Error:
        return None


async def store_sizes(settings: Settings) -> dict[str, float]:
    """On-disk sizes in MiB: the tenant's OpenSearch index (primary store) and Postgres'
    ``chunks`` (heap + TOAST + every index) and its HNSW index alone."""
    import psycopg

    from ragline.store.os_client import make_client
    from ragline.store.os_index import index_name

    client = make_client(settings, timeout_s=60)
    try:
        name = index_name(settings.opensearch_index_prefix, TENANT)
        st = await client.indices.stats(index=name, metric="store,docs")
    finally:
        await client.close()
    prim = st["_all"]["primaries"]
    with psycopg.connect(settings.admin_dsn()) as conn:
        row = conn.execute(
            "SELECT pg_total_relation_size('chunks'),"
            " coalesce(pg_relation_size(to_regclass('chunks_embedding_hnsw')), 0)"
        ).fetchone()
    assert row is not None
    return {
        "opensearch_docs": prim["docs"]["count"],
        "opensearch_index_mib": round(prim["store"]["size_in_bytes"] / 2**20, 1),
        "pg_chunks_total_mib": round(row[0] / 2**20, 1),
        "pg_hnsw_mib": round(row[1] / 2**20, 1),
    }


# ----------------------------------------------------------------------------- engine


async def engine_lexical(
    settings: Settings, queries: Sequence[str], clients: int, n: int, offset: int
) -> dict[str, Any]:
    """The lexical leg's own request (``lexical.build_query``, the service's over-fetch of
    50) sent straight to the node by ``clients`` concurrent clients: the engine without
    the query service. ``took_*`` is the node's own time per search (no queueing in the
    client or on the loopback), ``p*_ms`` the round trip."""
    from ragline.auth.principal import Principal
    from ragline.retrieval.lexical import build_query
    from ragline.store.os_client import make_client
    from ragline.store.os_index import index_name

    principal = Principal(tenant=TENANT, groups=(GROUP,), subject="bench")
    name = index_name(settings.opensearch_index_prefix, TENANT)
    lat: list[float] = []
    took: list[float] = []
    counter = iter(range(n))
    client = make_client(settings, timeout_s=120)

    async def worker() -> None:
        for i in counter:
            body = build_query(principal, queries[(offset + i) % len(queries)], [], limit=50)
            t0 = time.perf_counter()
            resp = await client.search(index=name, body=body)
            lat.append((time.perf_counter() - t0) * 1000)
            took.append(float(resp["took"]))

    try:
        await asyncio.gather(*(worker() for _ in range(clients)))
    finally:
        await client.close()
    pct = {q: float(np.percentile(lat, q)) for q in (50, 95, 99)}
    return {
        "clients": clients,
        "requests": n,
        **{f"p{q}_ms": round(v, 2) for q, v in pct.items()},
        "took_p50_ms": float(np.percentile(took, 50)),
        "took_p95_ms": float(np.percentile(took, 95)),
    }


async def force_merged(
    settings: Settings,
    url: str,
    queries: Sequence[str],
    modes: Sequence[str],
    clients: int,
    n: int,
) -> dict[str, Any]:
    """The same measurement after ``_forcemerge?max_num_segments=1`` (the index as a
    quiet node ends up: no segments left to merge, none being merged)."""
    from ragline.store.os_client import make_client
    from ragline.store.os_index import index_name

    name = index_name(settings.opensearch_index_prefix, TENANT)
    client = make_client(settings, timeout_s=3600)
    try:
        before = await client.indices.segments(index=name)
        t0 = time.perf_counter()
        await client.indices.forcemerge(index=name, max_num_segments=1, request_timeout=3600)
        # a merged segment serves searches only after a refresh (with no new documents the
        # periodic refresh may never open a new reader)
        await client.indices.refresh(index=name, request_timeout=3600)
        merge_s = time.perf_counter() - t0
        after = await client.indices.segments(index=name)
    finally:
        await client.close()

    def segments(resp: dict[str, Any]) -> int:
        """Segments searches read (``search: true``), over the primaries."""
        return sum(
            sum(1 for seg in c.get("segments", {}).values() if seg.get("search"))
            for i in resp.get("indices", {}).values()
            for copies in i.get("shards", {}).values()
            for c in copies
            if c.get("routing", {}).get("primary", True)
        )

    out: dict[str, Any] = {
        "segments_before": segments(before),
        "segments_after": segments(after),
        "force_merge_s": round(merge_s, 1),
        "query": {},
    }
    for k, mode in enumerate(modes):
        out["query"][mode] = await run_load(url, TENANT, queries, mode, False, clients, n, k * n)
    if "lexical" in modes:
        out["engine_lexical"] = await engine_lexical(settings, queries, clients, n, 0)
    out["load_avg_after"] = os.getloadavg()
    return out


# ----------------------------------------------------------------------------- report


def write_report(out: Path, report: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    (out / "growth.json").write_text(json.dumps(report, indent=2))
    steps = [s for s in report["steps"] if "query" in s]
    if not steps:
        return
    sizes = [s["chunks"] for s in steps]
    fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(16, 4.4))
    for mode in report["modes"]:
        line = ax0.plot(sizes, [s["query"][mode]["p95_ms"] for s in steps], marker="o")
        ax0.plot(
            sizes,
            [s["query"][mode]["p50_ms"] for s in steps],
            marker="x",
            linestyle=":",
            color=line[0].get_color(),
        )
        line[0].set_label(f"{mode} p95 (dotted: p50)")
    if all("engine_lexical" in s for s in steps):
        ax0.plot(
            sizes,
            [s["engine_lexical"]["took_p95_ms"] for s in steps],
            marker="s",
            color="black",
            label="lexical, OpenSearch alone: took p95",
        )
    ax0.axhline(TARGET_LEXICAL_P95_MS, color="grey", linestyle="--", linewidth=1)
    ax0.text(sizes[0], TARGET_LEXICAL_P95_MS * 1.05, "lexical p95 target", fontsize=7)
    ax0.set_title(f"query latency, {report['clients']} concurrent clients")
    ax0.set_ylabel("ms")
    ax0.set_yscale("log")
    if report["load"] == "direct":
        ax1.plot(
            sizes,
            [s["load"]["pg_copy_chunks_per_s"] for s in steps],
            marker="o",
            label="Postgres COPY",
        )
        ax1.plot(
            sizes,
            [s["load"]["opensearch_bulk_chunks_per_s"] for s in steps],
            marker="o",
            label="OpenSearch _bulk",
        )
        ax1.plot(
            sizes,
            [s["chunks"] / (s["load"]["hnsw_build_s"] or float("nan")) for s in steps],
            marker="o",
            label="HNSW build (all chunks)",
        )
        ax1.set_title("bulk load (synthetic chunks, no embedder)")
    else:
        ax1.plot(sizes, [s["ingest"]["chunks_per_s"] for s in steps], marker="o", label="step")
        tails = [s["ingest"]["tail_s_per_1k"] for s in steps]
        ax1.plot(
            sizes,
            [1000 / t if t else None for t in tails],
            marker="x",
            linestyle="--",
            label=f"last {TAIL:.0%} of step",
        )
        ax1.set_title("ingest (IndexerStage.handle_batch)")
    ax1.set_ylabel("child chunks/s")
    for key, label in (
        ("opensearch_index_mib", "OpenSearch index on disk"),
        ("pg_chunks_total_mib", "Postgres chunks + indexes"),
        ("pg_hnsw_mib", "of which HNSW"),
        ("opensearch_rss_mib", "OpenSearch node RSS"),
    ):
        ax2.plot(sizes, [s["size"].get(key) for s in steps], marker="o", label=label)
    ax2.set_title("size")
    ax2.set_ylabel("MiB")
    for ax in (ax0, ax1, ax2):
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("child chunks in the index")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    ax2.set_yscale("log")
    fig.tight_layout()
    fig.savefig(out / "growth.png", dpi=110)
    plt.close(fig)


def _summary(report: dict[str, Any]) -> str:
    modes = report["modes"]
    head = "| chunks | load | " + " | ".join(f"{m} p50/p95/p99 ms" for m in modes)
    lines = [head + " | OS index MiB | PG chunks MiB | OS RSS MiB |"]
    for s in report["steps"]:
        if "query" not in s:
            continue
        if "ingest" in s:
            i = s["ingest"]
            load = f"{i['chunks_per_s']} chunks/s, {i['s_per_1k']} s/1k (tail {i['tail_s_per_1k']})"
        else:
            ld = s["load"]
            load = (
                f"COPY {ld['pg_copy_chunks_per_s']}/s,"
                f" _bulk {ld['opensearch_bulk_chunks_per_s']}/s,"
                f" HNSW {ld['hnsw_build_s']} s"
            )
        q = " | ".join(
            f"{s['query'][m]['p50_ms']}/{s['query'][m]['p95_ms']}/{s['query'][m]['p99_ms']}"
            for m in modes
        )
        z = s["size"]
        lines.append(
            f"| {s['chunks']} | {load} | {q} | {z['opensearch_index_mib']} |"
            f" {z['pg_chunks_total_mib']} | {z['opensearch_rss_mib']} |"
        )
    lines.append(f"growth: {json.dumps(report['growth'])}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main


def _corpus(a: argparse.Namespace) -> tuple[Iterator[SynthDoc], list[str]]:
    if a.load == "direct" and a.text == "scifact":
        if not (SCIFACT / "corpus.jsonl").is_file():
            raise SystemExit(f"no SciFact at {SCIFACT} (RAGLINE_SCIFACT_DIR): use --text zipf")
        return scifact_docs(np.random.default_rng(7), SCIFACT), scifact_queries(SCIFACT)
    queries = synthetic_queries(np.random.default_rng(11), a.requests * len(a.modes.split(",")) + 5)
    return synthetic_docs(np.random.default_rng(7)), queries


async def bench(a: argparse.Namespace, base: Path) -> dict[str, Any]:
    from ragline.config import Settings
    from ragline.indexing.settings import IndexerSettings
    from ragline.indexing.stage import IndexerStage
    from ragline.platform.stack import StackManager, StackSettings
    from ragline.platform.stack.settings import Component
    from ragline.platform.stack.testing import ServiceProcess, free_port

    sizes = parse_sizes(a.sizes, a.max)
    modes = [m for m in a.modes.split(",") if m]
    direct = a.load == "direct"
    report: dict[str, Any] = {
        "tenant": TENANT,
        "load": a.load,
        "write_path": (
            "SYNTHETIC chunks written straight into both stores (no embedder): Postgres COPY"
            " in the indexer's row shape + one HNSW build per step, OpenSearch through"
            " ragline.store.os_bulk.bulk_index"
            if direct
            else f"IndexerStage.handle_batch, {INDEX_BATCH} doc.embedded per batch"
        ),
        "text": a.text if direct else "zipf",
        "vectors": "random unit vectors (384-d)",
        "chunks_per_document": CHUNKS_PER_DOC,
        "clients": a.clients,
        "requests": a.requests,
        "modes": modes,
        "sizes": sizes,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_avg_start": os.getloadavg(),
        "steps": [],
    }
    settings = Settings()
    manager = StackManager(settings, StackSettings(), detached=False)
    await manager.up()
    stage = None if direct else IndexerStage(settings, IndexerSettings())
    proc = None
    try:
        if stage is not None:
            await stage.start()
        proc = ServiceProcess(
            "query",
            env=retrieval_env(),
            log_path=base / "query.log",
            metrics_port=free_port(),
            http_port=free_port(),
            cwd=REPO,
        )
        await proc.wait_ready_async()  # the model loads before ingest starts, not during it
        os_server = manager.servers[Component.OPENSEARCH]
        docs, queries = _corpus(a)
        have = 0
        for size in sizes:
            step: dict[str, Any] = {"chunks": size, "load_avg_before": os.getloadavg()}
            n_docs = (size - have) // CHUNKS_PER_DOC
            label = f"{have}->{size}"
            if stage is not None:
                step["ingest"] = await ingest_step(stage, settings, docs, n_docs, label)
                step["analyze_s"] = await asyncio.to_thread(analyze, settings)
            else:
                await asyncio.to_thread(drop_hnsw, settings)
                step["load"] = await load_docs(
                    settings,
                    TENANT,
                    islice(docs, n_docs),
                    total_chunks=size - have,
                    label=label,
                    vectors=bool({"dense", "hybrid"} & set(modes)),
                )
                print(f"  {label}: {step['load']}; HNSW build over {size} chunks", flush=True)
                if {"dense", "hybrid"} & set(modes):
                    step["load"].update(
                        await asyncio.to_thread(build_hnsw, settings, a.maintenance_work_mem)
                    )
                else:  # nothing reads vectors: none written, no HNSW
                    step["load"]["hnsw_build_s"] = None
                print(f"  {label}: {step['load']}", flush=True)
            have = size
            step["size"] = {
                **await store_sizes(settings),
                "opensearch_rss_mib": rss_mib(os_server.pid()),
            }
            step["query"] = {}
            # CPU per request of each process: what the machine's load does not change
            # (latency on a shared 2-core machine is mostly waiting for a core)
            procs = {
                "query": proc.pid,
                "opensearch": os_server.pid(),
                "postgres": manager.servers[Component.POSTGRES].pid(),
            }
            # the same queries at every size: the ratios compare like with like
            for k, mode in enumerate(tqdm(modes, desc=f"query {size}", unit="mode")):
                before = {n: cpu_s([pid]) for n, pid in procs.items()}
                r = await run_load(
                    proc.http_url,
                    TENANT,
                    queries,
                    mode,
                    False,
                    a.clients,
                    a.requests,
                    k * a.requests,
                )
                r["cpu_ms_per_request"] = {
                    n: round((cpu_s([pid]) - before[n]) * 1000 / (a.requests + 5), 1)
                    for n, pid in procs.items()
                }  # run_load sends 5 warm-up requests first
                step["query"][mode] = r
            if "lexical" in modes:
                step["engine_lexical"] = await engine_lexical(
                    settings, queries, a.clients, a.requests, 0
                )
                print(f"  engine lexical at {size}: {step['engine_lexical']}", flush=True)
            step["opensearch_rss_mib_after_queries"] = rss_mib(os_server.pid())
            step["load_avg_after"] = os.getloadavg()
            report["steps"].append(step)
            report["growth"] = growth(report["steps"], modes)
            write_report(a.out, report)  # a run stopped later keeps this step
            print(json.dumps(step), flush=True)
        if a.force_merge and report["steps"]:
            last = report["steps"][-1]
            last["force_merged"] = await force_merged(
                settings, proc.http_url, queries, modes, a.clients, a.requests
            )
            write_report(a.out, report)
            print(json.dumps({"force_merged": last["force_merged"]}), flush=True)
    finally:
        if proc is not None:
            proc.cleanup()
        if stage is not None:
            await stage.stop()
        try:
            await manager.down()
        except Exception as exc:  # a slow server exit must not lose the results
            print(f"stack down failed: {type(exc).__name__}: {exc}", flush=True)
    report["load_avg_end"] = os.getloadavg()
    report["growth"] = growth(report["steps"], modes)
    return report


async def main(argv: list[str]) -> int:
    a = _args(argv)
    from ragline.platform.stack.testing import CLEARED_ENV, patched_environ, stack_env

    logging.basicConfig(level=logging.WARNING)
    base = Path(tempfile.mkdtemp(prefix="ragline-growth-bench-"))
    try:
        with patched_environ(stack_env(base / "state"), remove=CLEARED_ENV):
            report = await bench(a, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    write_report(a.out, report)
    print(_summary(report))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
