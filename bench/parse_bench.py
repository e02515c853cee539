"""Parse throughput benchmark (not a test): documents/s and MB/s.

    .venv/bin/python bench/parse_bench.py                 # SciFact as plain text + fixtures
    .venv/bin/python bench/parse_bench.py --limit 1000 --workers 2

SciFact: each corpus line becomes one plain-text document ("title\\n\\ntext").
Mixed: every committed golden fixture (tests/fixtures/parsing), parsed repeatedly for
about ``--seconds`` per format. Optional: ``--pdf FILE...`` for real-world PDFs.
Numbers are single-process unless ``--workers`` asks for the process pool too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import time
from collections import defaultdict
from pathlib import Path

from _paths import SCIFACT_CORPUS, add_quick

from ragline.events import DocumentMeta
from ragline.parsing import ParseExecutor, ParserSettings, parse_document

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = SCIFACT_CORPUS
FIXTURES = ROOT / "tests" / "fixtures" / "parsing"


def _scifact(limit: int | None) -> list[bytes]:
    docs = []
    with SCIFACT.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            docs.append(f"{row.get('title', '')}\n\n{row.get('text', '')}\n".encode())
            if limit and len(docs) >= limit:
                break
    return docs


def _row(
    label: str, n: int, nbytes: int, seconds: float, blocks: int, cpu: float | None = None
) -> str:
    """Wall-clock rates, plus rates per CPU-second (robust when the machine is shared)."""
    per_cpu = f"{n / cpu:,.0f} | {nbytes / 1e6 / cpu:.2f}" if cpu else "- | -"
    return (
        f"| {label} | {n} | {nbytes / 1e6:.2f} | {seconds:.2f} | {n / seconds:,.0f} | "
        f"{nbytes / 1e6 / seconds:.2f} | {per_cpu} | {blocks / max(n, 1):.1f} |"
    )


def bench_scifact(docs: list[bytes], settings: ParserSettings) -> str:
    meta = DocumentMeta(uri="file:///scifact/doc.txt", mime_type="text/plain")
    blocks = 0
    started, cpu = time.perf_counter(), time.process_time()
    for data in docs:
        blocks += len(parse_document(data, meta, settings).blocks)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return _row("SciFact as text (1 process)", len(docs), sum(map(len, docs)), elapsed, blocks, cpu)


async def _pool(docs: list[bytes], workers: int) -> tuple[float, int]:
    executor = ParseExecutor(ParserSettings(workers=workers))
    await executor.start()
    meta = DocumentMeta(uri="file:///scifact/doc.txt", mime_type="text/plain")
    try:
        await executor.parse(b"warm up\n", meta)
        sem = asyncio.Semaphore(workers * 4)

        async def one(data: bytes) -> int:
            async with sem:
                return len((await executor.parse(data, meta)).blocks)

        started = time.perf_counter()
        counts = await asyncio.gather(*(one(d) for d in docs))
        return time.perf_counter() - started, sum(counts)
    finally:
        await executor.stop()


def bench_pool(docs: list[bytes], workers: int) -> str:
    elapsed, blocks = asyncio.run(_pool(docs, workers))
    label = f"SciFact as text (ParseExecutor, {workers} worker process{'es' * (workers > 1)})"
    return _row(label, len(docs), sum(map(len, docs)), elapsed, blocks)


def bench_files(paths: list[Path], seconds: float, settings: ParserSettings) -> list[str]:
    by_format: dict[str, list[tuple[Path, bytes]]] = defaultdict(list)
    for p in paths:
        data = p.read_bytes()
        fmt = parse_document(data, DocumentMeta(uri=p.as_uri()), settings).format
        by_format[fmt].append((p, data))
    rows = []
    groups = sorted(by_format.items())
    if len(groups) > 1:
        groups.append(
            (
                f"mixed: all {len(paths)} files round-robin",
                [it for _, items in groups for it in items],
            )
        )
    for fmt, items in groups:
        n = nbytes = blocks = 0
        started, cpu = time.perf_counter(), time.process_time()
        while time.perf_counter() - started < seconds:
            for p, data in items:
                blocks += len(parse_document(data, DocumentMeta(uri=p.as_uri()), settings).blocks)
                n += 1
                nbytes += len(data)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        label = fmt if fmt.startswith("mixed") else f"{fmt} ({', '.join(p.name for p, _ in items)})"
        rows.append(_row(label, n, nbytes, elapsed, blocks, cpu))
    return rows


def main() -> None:
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="SciFact documents (default: all)")
    ap.add_argument("--seconds", type=float, default=1.5, help="per fixture format")
    ap.add_argument("--workers", type=int, default=0, help="also run the process pool")
    ap.add_argument("--pdf", nargs="*", type=Path, default=[], help="extra real-world PDFs")
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.limit, args.seconds, args.workers = 200, 0.1, 0
    settings = ParserSettings(workers=0)
    load = os.getloadavg()[0]
    print(
        f"# parse benchmark — {os.cpu_count()} CPUs, load average {load:.1f}, "
        f"Python {platform.python_version()}"
    )
    print("| input | docs | MB | wall s | docs/s | MB/s | docs/CPU-s | MB/CPU-s | blocks/doc |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    if SCIFACT.exists():
        docs = _scifact(args.limit)
        print(bench_scifact(docs, settings), flush=True)
        if args.workers:
            print(bench_pool(docs, args.workers), flush=True)
    inputs = sorted(
        p
        for p in FIXTURES.iterdir()
        if p.is_file() and not p.name.endswith(".expected.json") and p.name != "make_fixtures.py"
    )
    for row in bench_files(inputs, args.seconds, settings):
        print(row, flush=True)
    if args.pdf:
        for row in bench_files(args.pdf, args.seconds, settings):
            print(row.replace("| pdf (", "| real PDF (", 1), flush=True)


if __name__ == "__main__":
    main()
