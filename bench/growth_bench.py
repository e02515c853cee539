"""Cost growth: how ingest time and query latency grow with the corpus, as ratios.

On a private stack (temp dir, free ports, stopped afterwards) it ingests the synthetic
corpus (bench/_synthetic.py: random unit 384-d vectors, Zipf-distributed words) in steps
up to each size through the indexer's production write path, ``IndexerStage.handle_batch``
on batches of ``doc.embedded`` events (what ``ragline run indexer`` does per consumed
batch: one Postgres transaction per document into the live HNSW index, then one
OpenSearch projection per batch). After each step it measures query latency
p50/p95/p99 per mode at 4 concurrent clients against a real ``ragline run query``
process over HTTP (bench/query_bench.py's client). It reports the marginal ingest cost
of each step (s per 1k child chunks, chunks/s) and growth ratios: the largest size over
the smallest, for ingest s/1k and for each mode's p95. Writes bench/out/growth.{json,png}.

    .venv/bin/python bench/growth_bench.py [--sizes 10000,100000] [--max 1000000]
        [--requests 120] [--clients 4] [--modes lexical,dense,hybrid] [--quick]

``--quick`` is ``--sizes 2000,5000 --requests 30``. A size whose OpenSearch memory,
extrapolated from the steps before it, would not fit in the available memory is skipped
and reported as such (the in-memory OpenSearch server holds the whole BM25 index).
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
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import psutil
from _paths import OUT, REPO
from _synthetic import CHUNKS_PER_DOC, DIM, SynthDoc, synthetic_docs, synthetic_queries
from query_bench import GROUP, retrieval_env, run_load
from tqdm import tqdm

if TYPE_CHECKING:
    from ragline.config import Settings
    from ragline.events import DocEmbedded
    from ragline.indexing.stage import IndexerStage

TENANT = "growth"
INDEX_BATCH = 32  # IndexerStage.batch.max_records: one consumed batch
TAIL = 0.1  # the last 10% of a step: its cost closest to "at that size"
MEM_HEADROOM = 0.8  # use at most this share of the available memory for the next step


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="10000,100000", help="child chunk counts, ascending")
    p.add_argument("--max", type=int, help="one more, larger size (e.g. 1000000) if memory allows")
    p.add_argument("--requests", type=int, default=120, help="requests per (size, mode)")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--modes", default="lexical,dense,hybrid")
    p.add_argument("--quick", action="store_true", help="--sizes 2000,5000 --requests 30")
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    if a.quick:
        a.sizes, a.requests = "2000,5000", 30
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


def growth(steps: Sequence[dict[str, Any]], modes: Sequence[str]) -> dict[str, Any]:
    """The largest measured size over the smallest: ingest s/1k and p95 per mode."""
    done = [s for s in steps if "ingest" in s]
    if len(done) < 2:
        return {}
    lo, hi = done[0], done[-1]
    out: dict[str, Any] = {
        "from_chunks": lo["chunks"],
        "to_chunks": hi["chunks"],
        "size_ratio": ratio(hi["chunks"], lo["chunks"]),
        "ingest_s_per_1k": ratio(hi["ingest"]["s_per_1k"], lo["ingest"]["s_per_1k"]),
        "ingest_tail_s_per_1k": ratio(hi["ingest"]["tail_s_per_1k"], lo["ingest"]["tail_s_per_1k"]),
        "query_p95": {},
    }
    for m in modes:
        a, b = lo["query"].get(m), hi["query"].get(m)
        if a and b:
            out["query_p95"][m] = ratio(b["p95_ms"], a["p95_ms"])
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


# ----------------------------------------------------------------------------- memory


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        rss: int = psutil.Process(pid).memory_info().rss
        return round(rss / 2**20, 1)
    except psutil.Error:
        return None


def fits(os_rss: float | None, have: int, want: int) -> tuple[bool, str]:
    """Extrapolate the OpenSearch server's memory linearly from ``have`` chunks."""
    avail = psutil.virtual_memory().available / 2**20
    if not os_rss or have == 0:
        return True, f"{avail:.0f} MiB available"
    need = os_rss / have * (want - have)
    ok = need < avail * MEM_HEADROOM
    return ok, f"needs ~{need:.0f} MiB more for OpenSearch, {avail:.0f} MiB available"


# ----------------------------------------------------------------------------- report


def write_report(out: Path, report: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    (out / "growth.json").write_text(json.dumps(report, indent=2))
    steps = [s for s in report["steps"] if "ingest" in s]
    if not steps:
        return
    sizes = [s["chunks"] for s in steps]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
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
    for mode in report["modes"]:
        ax2.plot(sizes, [s["query"][mode]["p95_ms"] for s in steps], marker="o", label=mode)
    ax2.set_title(f"query p95, {report['clients']} concurrent clients")
    ax2.set_ylabel("p95 latency (ms)")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("child chunks in the index")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "growth.png", dpi=110)


def _summary(report: dict[str, Any]) -> str:
    lines = [
        "| chunks | ingest s | chunks/s | s/1k | tail s/1k | "
        + " | ".join(f"{m} p50/p95/p99 ms" for m in report["modes"])
        + " |"
    ]
    for s in report["steps"]:
        if "ingest" not in s:
            lines.append(f"| {s['chunks']} | skipped: {s['skipped']} |")
            continue
        i = s["ingest"]
        q = " | ".join(
            f"{s['query'][m]['p50_ms']}/{s['query'][m]['p95_ms']}/{s['query'][m]['p99_ms']}"
            for m in report["modes"]
        )
        lines.append(
            f"| {s['chunks']} | {i['seconds']} | {i['chunks_per_s']} | {i['s_per_1k']} |"
            f" {i['tail_s_per_1k']} | {q} |"
        )
    lines.append(f"growth: {json.dumps(report['growth'])}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main


async def bench(a: argparse.Namespace, base: Path) -> dict[str, Any]:
    from ragline.config import Settings
    from ragline.indexing.settings import IndexerSettings
    from ragline.indexing.stage import IndexerStage
    from ragline.platform.stack import StackManager, StackSettings
    from ragline.platform.stack.settings import Component
    from ragline.platform.stack.testing import ServiceProcess, free_port

    sizes = parse_sizes(a.sizes, a.max)
    modes = [m for m in a.modes.split(",") if m]
    report: dict[str, Any] = {
        "tenant": TENANT,
        "write_path": f"IndexerStage.handle_batch, {INDEX_BATCH} doc.embedded per batch",
        "chunks_per_document": CHUNKS_PER_DOC,
        "clients": a.clients,
        "requests": a.requests,
        "modes": modes,
        "sizes": sizes,
        "load_avg_start": os.getloadavg(),
        "steps": [],
    }
    settings = Settings()
    manager = StackManager(settings, StackSettings(), detached=False)
    await manager.up()
    stage = IndexerStage(settings, IndexerSettings())
    proc = None
    try:
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
        docs = synthetic_docs(np.random.default_rng(7))
        queries = synthetic_queries(np.random.default_rng(11), a.requests * len(modes) + 5)
        have = 0
        for size in sizes:
            step: dict[str, Any] = {"chunks": size}
            ok, mem = fits(rss_mib(os_server.pid()), have, size)
            if not ok:
                step["skipped"] = mem
                print(f"skipping {size}: {mem}", flush=True)
                report["steps"].append(step)
                break
            step["ingest"] = await ingest_step(
                stage, settings, docs, (size - have) // CHUNKS_PER_DOC, f"{have}->{size}"
            )
            have = size
            step["analyze_s"] = await asyncio.to_thread(analyze, settings)
            step["opensearch_rss_mib"] = rss_mib(os_server.pid())
            step["query"] = {}
            # the same queries at every size: the ratios compare like with like
            for k, mode in enumerate(tqdm(modes, desc=f"query {size}", unit="mode")):
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
                step["query"][mode] = r
            report["steps"].append(step)
            print(json.dumps(step), flush=True)
    finally:
        if proc is not None:
            proc.cleanup()
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
