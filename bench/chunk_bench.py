"""Chunker + enricher throughput (the two stages' pure work, no broker) on SciFact.

    .venv/bin/python bench/chunk_bench.py [--docs N] [--corpus PATH] [--json out.json]

Each SciFact abstract becomes a ParsedDocument: a title heading and the abstract as
paragraphs (split at blank lines / line breaks where the corpus has them). Every
document goes through ``chunk_event`` (DocScanned -> DocChunked) and ``enrich_event``
(DocChunked -> DocEnriched) in one thread, as one consumer does. Reports documents/s,
MB/s (UTF-8 bytes of title + text), chunks/s, per-document latency percentiles and the
child size distribution, for SciFact and for the mixed-format fixture set
(tests/fixtures/chunking). Prints a markdown table for docs/chunking.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from _paths import SCIFACT_CORPUS, add_quick
from _paths import scifact as require_scifact

from ragline.chunking import Chunker, ChunkerSettings
from ragline.chunking.stage import chunk_event
from ragline.enrichment import Enricher, EnricherSettings
from ragline.enrichment.stage import enrich_event
from ragline.events import (
    Block,
    BlockKind,
    ChunkLevel,
    DocScanned,
    DocumentMeta,
    FindingsSummary,
    ParsedDocument,
)
from ragline.hashing import sha256_hex
from ragline.text import load_token_counter

ROOT = Path(__file__).resolve().parents[1]
CORPUS = SCIFACT_CORPUS
FIXTURES = ROOT / "tests" / "fixtures" / "chunking"


def scifact(path: Path, limit: int | None) -> list[tuple[DocScanned, int]]:
    out: list[tuple[DocScanned, int]] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            title, text = d["title"].strip(), d["text"].strip()
            path_ = (title,) if title else ()
            blocks = [Block(kind=BlockKind.HEADING, text=title, section_path=path_, level=1)]
            paras = [p.strip() for p in text.replace("\r", "").split("\n") if p.strip()]
            blocks += [Block(kind=BlockKind.PARAGRAPH, text=p, section_path=path_) for p in paras]
            doc = ParsedDocument(title=title or None, format="text", blocks=tuple(blocks))
            size = len((title + "\n" + text).encode("utf-8"))
            out.append(
                (_event(f"scifact:{d['_id']}", DocumentMeta(title=title or None), doc), size)
            )
            if limit and len(out) >= limit:
                break
    return out


def fixtures() -> list[tuple[DocScanned, int]]:
    out = []
    for p in sorted(FIXTURES.glob("*.json")):
        if p.name.endswith(".golden.json"):
            continue
        data = json.loads(p.read_text())
        doc = ParsedDocument.model_validate(data["document"])
        size = sum(len(b.text.encode("utf-8")) for b in doc.blocks) + sum(
            len(" ".join(c for r in b.table.rows for c in r).encode("utf-8"))
            for b in doc.blocks
            if b.table is not None
        )
        meta = DocumentMeta.model_validate(data["meta"])
        out.append((_event(data["document_id"], meta, doc), size))
    return out


def _event(document_id: str, meta: DocumentMeta, doc: ParsedDocument) -> DocScanned:
    return DocScanned(
        tenant_id="bench",
        document_id=document_id,
        content_hash=sha256_hex(document_id),
        source_seq=1,
        meta=meta,
        document=doc,
        findings=FindingsSummary(),
        scanner_version="bench",
    )


def run(
    events: list[tuple[DocScanned, int]], chunker: Chunker, enricher: Enricher
) -> dict[str, Any]:
    per_doc: list[float] = []
    chunk_s = enrich_s = 0.0
    parents = children = 0
    child_tokens: list[int] = []
    started = time.perf_counter()
    cpu_started = time.process_time()
    for event, _ in events:
        t0 = time.perf_counter()
        chunked = chunk_event(event, chunker)
        t1 = time.perf_counter()
        enriched = enrich_event(chunked, enricher)
        t2 = time.perf_counter()
        chunk_s += t1 - t0
        enrich_s += t2 - t1
        per_doc.append(t2 - t0)
        for c in enriched.chunks:
            if c.level is ChunkLevel.PARENT:
                parents += 1
            else:
                children += 1
                child_tokens.append(c.token_count)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    mb = sum(size for _, size in events) / 1e6
    per_doc.sort()
    return {
        "documents": len(events),
        "megabytes": round(mb, 3),
        "seconds": round(wall, 3),
        "docs_per_s": round(len(events) / wall, 1),
        "mb_per_s": round(mb / wall, 3),
        "chunks_per_s": round((parents + children) / wall, 1),
        "children_per_s": round(children / wall, 1),
        "cpu_seconds": round(cpu, 3),
        "cpu_docs_per_s": round(len(events) / cpu, 1),
        "cpu_mb_per_s": round(mb / cpu, 3),
        "cpu_chunks_per_s": round((parents + children) / cpu, 1),
        "chunk_share": round(chunk_s / (chunk_s + enrich_s), 2),
        "parents": parents,
        "children": children,
        "child_tokens_mean": round(statistics.fmean(child_tokens), 1) if child_tokens else 0,
        "child_tokens_max": max(child_tokens, default=0),
        "doc_ms_p50": round(1000 * per_doc[len(per_doc) // 2], 2),
        "doc_ms_p95": round(1000 * per_doc[int(len(per_doc) * 0.95)], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=None, help="SciFact documents (default: all)")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--fixture-rounds", type=int, default=50)
    ap.add_argument("--json", type=Path, default=None)
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:  # the fixtures always; SciFact when it is there
        args.docs, args.fixture_rounds = 100, 2
    elif args.corpus == CORPUS:
        require_scifact()  # or say where to get it

    conf = ChunkerSettings()
    t0 = time.perf_counter()
    counter = load_token_counter(conf.tokenizer_path)
    load_s = time.perf_counter() - t0
    chunker = Chunker(conf, counter)
    enricher = Enricher(
        counter, header_budget=conf.header_budget_tokens, settings=EnricherSettings()
    )
    results: dict[str, Any] = {
        "tokenizer_load_s": round(load_s, 3),
        "strategy_version": conf.strategy_version,
    }
    if args.corpus.exists():
        events = scifact(args.corpus, args.docs)
        run(events[:50], chunker, enricher)  # warm-up
        results["scifact"] = run(events, chunker, enricher)
    else:
        print(f"(no SciFact corpus at {args.corpus}: skipped)")
    results["fixtures"] = run(fixtures() * args.fixture_rounds, chunker, enricher)

    results["loadavg_1m"] = round(os.getloadavg()[0], 1)
    print(
        f"tokenizer load {results['tokenizer_load_s']} s, strategy {conf.strategy_version}, "
        f"load average {results['loadavg_1m']} (wall-clock columns suffer when it exceeds 2)"
    )
    cols = [
        "cpu_docs_per_s",
        "cpu_mb_per_s",
        "cpu_chunks_per_s",
        "documents",
        "megabytes",
        "docs_per_s",
        "mb_per_s",
        "chunks_per_s",
        "children",
        "parents",
        "child_tokens_mean",
        "child_tokens_max",
        "doc_ms_p50",
        "doc_ms_p95",
        "chunk_share",
    ]
    print("| set | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for name in ("scifact", "fixtures"):
        if name in results:
            print(f"| {name} | " + " | ".join(str(results[name][c]) for c in cols) + " |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
