"""What the chunker's service process keeps after a heavy document (docs/benchmarks.md).

One single-line CSV of ``--mb`` MB goes through the real ``ChunkerStage`` on the bulk lane
(chunked in a process of its own, ``runtime.oneshot.run_once``), as the service handles
it: the event decoded from its JSON, the output encoded to JSON, then the consumer's
``release_memory`` (garbage collection + ``malloc_trim``). Prints the process's RSS
before / at the end of the document / after the release, and the Python allocations
still alive that were made during it (``tracemalloc``, biggest first): near zero means
nothing of ours holds the document, and what RSS keeps is the allocator's.

    .venv/bin/python bench/chunker_memory.py --mb 5
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import time
import tracemalloc

from ragline.chunking.config import ChunkerSettings
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.events import BULK, DocChunked, DocScanned, DocumentMeta, FindingsSummary
from ragline.parsing.dispatcher import parse_document
from ragline.parsing.settings import ParserSettings
from ragline.runtime.oneshot import release_memory
from ragline.runtime.stage import StageContext


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def body(mb: float) -> str:
    """The ``doc.scanned`` JSON of a single-line CSV of ``mb`` MB (the freshness bench's)."""
    text = "".join(f"v{i}," for i in range(int(mb * 1_000_000 / 8)))
    meta = DocumentMeta(title="big", mime_type="text/csv", acl_groups=("all",), source_type="b")
    doc = parse_document(text.encode(), meta, ParserSettings(max_bytes=64 * 2**20))
    return DocScanned(
        tenant_id="bench",
        document_id="bench:big.csv",
        source_seq=1,
        content_hash="0" * 64,
        meta=meta,
        document=doc,
        findings=FindingsSummary(),
        scanner_version="1",
        priority=BULK,
    ).model_dump_json()


async def measure(wire: str) -> None:
    stage = ChunkerStage(Settings(), ChunkerSettings(max_children=0, heavy_timeout_s=3600))
    await stage.start()
    ctx = StageContext(settings=Settings(), logger=logging.getLogger("bench"))
    try:
        release_memory()
        before = rss_mb()
        tracemalloc.start(8)
        start = tracemalloc.take_snapshot()
        t0 = time.perf_counter()
        event = DocScanned.model_validate_json(wire)
        outs = await stage.handle(event, ctx)
        sent = [o.event.model_dump_json() for o in outs]
        chunks = sum(len(o.event.chunks) for o in outs if isinstance(o.event, DocChunked))
        held = rss_mb()
        del event, outs, sent
        release_memory()
        after = rss_mb()
        alive = tracemalloc.take_snapshot().compare_to(start, "filename")
        tracemalloc.stop()
    finally:
        await stage.stop()
    print(
        f"{chunks} chunks in {time.perf_counter() - t0:.0f} s; RSS MB before {before:.0f}, "
        f"at the end {held:.0f}, after release {after:.0f} ({after - before:+.0f}); "
        f"Python allocations still alive: {sum(s.size_diff for s in alive) / 1024:.0f} KB"
    )
    for s in alive[:5]:
        print(f"  {s.size_diff / 1024:8.0f} KB  {s.traceback}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=5.0)
    args = ap.parse_args()
    wire = body(args.mb)
    asyncio.run(measure(wire))


if __name__ == "__main__":  # the heavy document's process is spawned: guard the main module
    main()
