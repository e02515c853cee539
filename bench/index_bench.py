"""Embedder and indexer benchmark (not a test), on SciFact abstracts.

Measures, on a private stack (started in a temp dir, stopped afterwards):
- embedder alone: child chunks/s through EmbedderStage.handle_batch with the real
  all-MiniLM-L6-v2, cache off (the model's throughput), then the same documents again
  with the Postgres cache warm (re-ingest of unchanged text);
- indexer alone: child chunks/s through IndexerStage.handle_batch (one Postgres
  transaction per document + one OpenSearch projection per batch), then a replay of the
  same events (ledger hits);
- both in one process, pipelined through a bounded queue, as a ratio to the slower
  stage alone (the whole-pipeline benchmark across processes is ``bench/run_all.py``).

    .venv/bin/python bench/index_bench.py [--docs 1000] [--corpus PATH]

Prints a JSON report (also written to bench/out/index.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _paths import SCIFACT_CORPUS, add_quick, scifact

from ragline.config import Settings
from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.stage import EmbedderStage
from ragline.events import ChunkLevel, DocEmbedded, DocEnriched
from ragline.indexing.samples import as_embedded, enriched_event
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.testing import patched_environ, stack_env
from ragline.runtime.stage import StageContext

CORPUS = SCIFACT_CORPUS
CHILD_WORDS = 90  # ~120 word pieces: well under the model's 256-token window
EMBED_BATCH = 64  # events per handle_batch (the stage's BatchConfig.max_records)
INDEX_BATCH = IndexerStage.batch.max_records if IndexerStage.batch else 32  # the stage's poll
BATCH_SIZES = (32, 128)  # indexer batch sizes compared side by side


def _children(text: str) -> list[str]:
    """Sentence-packed children of at most ~CHILD_WORDS words."""
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    out: list[str] = []
    cur: list[str] = []
    for s in sentences:
        if cur and len(" ".join(cur).split()) + len(s.split()) > CHILD_WORDS:
            out.append(" ".join(cur))
            cur = []
        cur.append(s)
    if cur:
        out.append(" ".join(cur))
    return [c for c in out if c]


def load_events(path: Path, n: int, tenant: str, seq: int = 1) -> list[DocEnriched]:
    events: list[DocEnriched] = []
    with path.open() as fh:
        for line in fh:
            doc = json.loads(line)
            texts = _children(doc["text"])
            if not texts:
                continue
            events.append(
                enriched_event(
                    tenant_id=tenant,
                    document_id=f"scifact:{doc['_id']}",
                    source_seq=seq,
                    texts=texts,
                    title=doc["title"][:1000] or None,
                    acl_groups=("everyone",),
                )
            )
            if len(events) == n:
                break
    return events


def n_children(events: Sequence[DocEnriched | DocEmbedded]) -> int:
    return sum(1 for e in events for c in e.chunks if c.level is ChunkLevel.CHILD)


def _ctx(settings: Settings) -> StageContext:
    return StageContext(settings=settings, logger=logging.getLogger("bench"))


async def run_embedder(
    stage: EmbedderStage, events: Sequence[DocEnriched], settings: Settings
) -> tuple[list[DocEmbedded], float]:
    out: list[DocEmbedded] = []
    t0 = time.perf_counter()
    for i in range(0, len(events), EMBED_BATCH):
        for r in await stage.handle_batch(events[i : i + EMBED_BATCH], _ctx(settings)):
            if isinstance(r, BaseException):
                raise r
            ev = r[0].event
            assert isinstance(ev, DocEmbedded)
            out.append(ev)
    return out, time.perf_counter() - t0


async def run_indexer(
    stage: IndexerStage,
    events: Sequence[DocEmbedded],
    settings: Settings,
    *,
    batch: int = INDEX_BATCH,
) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(events), batch):
        for r in await stage.handle_batch(events[i : i + batch], _ctx(settings)):
            if isinstance(r, BaseException):
                raise r
    return time.perf_counter() - t0


async def run_pipelined(
    emb: EmbedderStage, idx: IndexerStage, events: Sequence[DocEnriched], settings: Settings
) -> float:
    """Embedder and indexer as two tasks joined by a bounded queue (backpressure)."""
    queue: asyncio.Queue[list[DocEmbedded] | None] = asyncio.Queue(maxsize=4)

    async def produce() -> None:
        for i in range(0, len(events), EMBED_BATCH):
            results = await emb.handle_batch(events[i : i + EMBED_BATCH], _ctx(settings))
            batch = [r[0].event for r in results if not isinstance(r, BaseException)]
            await queue.put(batch)  # type: ignore[arg-type]
        await queue.put(None)

    async def consume() -> None:
        while (batch := await queue.get()) is not None:
            await run_indexer(idx, batch, settings)

    t0 = time.perf_counter()
    await asyncio.gather(produce(), consume())
    return time.perf_counter() - t0


def rate(chunks: int, seconds: float) -> float:
    return round(chunks / seconds, 1) if seconds > 0 else 0.0


async def bench(settings: Settings, corpus: Path, n_docs: int) -> dict[str, Any]:
    events = load_events(corpus, n_docs, "bench")
    children = n_children(events)
    report: dict[str, Any] = {"documents": len(events), "child_chunks": children}

    emb_nocache = EmbedderStage(settings, EmbedderSettings(cache=False))
    t0 = time.perf_counter()
    await emb_nocache.start()
    report["model_load_s"] = round(time.perf_counter() - t0, 2)
    await run_embedder(emb_nocache, events[:64], settings)  # warm-up (first call is slow)
    embedded, secs = await run_embedder(emb_nocache, events, settings)
    report["embedder_alone"] = {"seconds": round(secs, 2), "chunks_per_s": rate(children, secs)}
    await emb_nocache.stop()

    emb = EmbedderStage(settings, EmbedderSettings(cache=True))
    emb._embedder = emb_nocache._embedder  # share the loaded model
    await emb.start()
    _, secs_fill = await run_embedder(emb, events, settings)
    _, secs_hit = await run_embedder(emb, events, settings)
    report["embedder_cache"] = {
        "cold_chunks_per_s": rate(children, secs_fill),
        "warm_chunks_per_s": rate(children, secs_hit),
        "stats": vars(emb.batcher.stats),
    }

    idx = IndexerStage(settings, IndexerSettings())
    await idx.start()
    secs = await run_indexer(idx, embedded, settings)
    report["indexer_alone"] = {"seconds": round(secs, 2), "chunks_per_s": rate(children, secs)}
    secs = await run_indexer(idx, embedded, settings)
    report["indexer_replay"] = {"seconds": round(secs, 2), "chunks_per_s": rate(children, secs)}
    # the same writes in batches of other sizes (under a backlog a poll brings up to the
    # stage's max_records): each a fresh tenant with the same vectors
    by_size: dict[str, float] = {}
    for size in BATCH_SIZES:
        # another tenant's copy of each document, with the vectors computed above
        again = [
            as_embedded(
                ev,
                [c.embedding for c in like.chunks],
                model=like.embedding_model,
                revision=like.embedding_revision,
                dim=like.embedding_dim,
            )
            for ev, like in zip(
                load_events(corpus, n_docs, f"bench-b{size}"), embedded, strict=True
            )
        ]
        secs = await run_indexer(idx, again, settings, batch=size)
        by_size[str(size)] = rate(children, secs)
    report["indexer_chunks_per_s_by_batch"] = by_size

    # pipelined: a new tenant (fresh writes), the embedder without cache (model-bound)
    emb_nocache2 = EmbedderStage(settings, EmbedderSettings(cache=False))
    emb_nocache2._embedder = emb_nocache._embedder
    await emb_nocache2.start()
    events2 = load_events(corpus, n_docs, "bench-pipe")
    secs = await run_pipelined(emb_nocache2, idx, events2, settings)
    pipe = rate(children, secs)
    slowest = min(report["embedder_alone"]["chunks_per_s"], report["indexer_alone"]["chunks_per_s"])
    report["pipelined_in_process"] = {
        "seconds": round(secs, 2),
        "chunks_per_s": pipe,
        "ratio_to_slowest_stage": round(pipe / slowest, 3) if slowest else None,
    }
    await emb.stop()
    await emb_nocache2.stop()
    await idx.stop()
    return report


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    add_quick(parser)
    args = parser.parse_args()
    if args.corpus == CORPUS:
        scifact(quick=args.quick)  # or say where to get it (--quick: a skip)
    if args.quick:
        args.docs = 40
    logging.basicConfig(level=logging.WARNING)
    with (
        tempfile.TemporaryDirectory(prefix="ragline-index-bench-") as tmp,
        patched_environ(stack_env(Path(tmp) / "state")),
    ):
        settings = Settings()
        manager = StackManager(settings, StackSettings(), detached=False)
        await manager.up()
        try:
            report = {
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": sys.version.split()[0],
                    "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
                },
                **await bench(settings, args.corpus, args.docs),
            }
        finally:
            await manager.down()
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "index.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
