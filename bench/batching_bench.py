"""Model-call size and intra-op threads for the embedder on this machine (not a test).

The embedder feeds the model length-ordered calls across documents (embedding/batcher.py,
adaptive.py); how many texts per call and how many ONNX Runtime threads pay off depends
on the cores. On real chunks (SciFact abstracts through the chunker and enricher: what
the embedder encodes), every (threads, texts per call) pair encodes the same texts, the
pairs taking turns round by round in a rotating order, so a loaded machine slows them
alike; the median round is reported, and each pair's speed against calls of one text.
A batch-independent backend is needed for calls of many texts to be worth measuring:
``onnx`` (fp32) by default; today's ``onnx-int8`` runs each text alone whatever the
call size.

    .venv/bin/python bench/batching_bench.py [--backend onnx] [--docs 60] [--rounds 3]
        [--batches 1,8,16,32,64] [--threads 1,2] [--json bench/out/batching.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _paths import OUT, SCIFACT, add_quick, scifact
from embedder_bench import chunk_texts

from ragline.embedding.adaptive import MODEL_WINDOW, plan_batches
from ragline.embedding.model import Embedder, load_embedder
from ragline.embedding.settings import EmbedderSettings


def run_pair(model: Embedder, texts: list[str], lengths: list[int], batch: int) -> float:
    """Texts/s for calls of up to ``batch`` length-ordered texts (the stage's plan)."""
    plan = plan_batches(lengths, token_budget=batch * MODEL_WINDOW, max_batch=batch)
    t0 = time.perf_counter()
    for call in plan:
        model.encode([texts[i] for i in call])
    return len(texts) / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="onnx")
    ap.add_argument("--docs", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", default="1,8,16,32,64")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--json", type=Path, default=OUT / "batching.json")
    add_quick(ap)  # here: 20 documents, one round, 1 and 16 per call, 2 threads
    args = ap.parse_args()
    scifact(quick=args.quick)  # or say where to get it (--quick: a skip)
    if args.quick:
        args.docs, args.rounds, args.batches, args.threads = 20, 1, "1,16", "2"
    os.environ["RAGLINE_EMBEDDER_BACKEND"] = args.backend
    docs = []
    with (SCIFACT / "corpus.jsonl").open() as fh:
        for line in itertools.islice(fh, args.docs):
            docs.append(json.loads(line))
    texts = chunk_texts(docs)
    cfg = EmbedderSettings()
    batches = [int(b) for b in args.batches.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    models = {t: load_embedder(cfg, threads=t, batch_size=max(batches)) for t in threads}
    tokenize = getattr(models[threads[0]], "tokenize", None)
    lengths = [len(ids) for ids in tokenize(texts)] if tokenize else [len(t) // 4 for t in texts]
    for m in models.values():
        m.encode(texts[:8])  # warm-up
    pairs = [(t, b) for t in threads for b in batches]
    rates: dict[tuple[int, int], list[float]] = {p: [] for p in pairs}
    load: list[float] = []
    for r in range(args.rounds):
        load.append(os.getloadavg()[0])
        for t, b in pairs[r % len(pairs) :] + pairs[: r % len(pairs)]:
            rates[(t, b)].append(run_pair(models[t], texts, lengths, b))
        print(f"round {r + 1}/{args.rounds} done (load {load[-1]:.1f})", flush=True)
    base = {t: statistics.median(rates[(t, 1)]) if (t, 1) in rates else None for t in threads}
    report = {
        "backend": args.backend,
        "texts": len(texts),
        "median_tokens": statistics.median(lengths),
        "rounds": args.rounds,
        "load_average_1m": load,
        "texts_per_s": {
            f"threads={t} batch={b}": {
                "median": round(statistics.median(v), 2),
                "rounds": [round(x, 2) for x in v],
                "vs_batch1": round(statistics.median(v) / base[t], 2) if base[t] else None,
            }
            for (t, b), v in rates.items()
        },
    }
    print(f"{len(texts)} chunks, median {report['median_tokens']} word pieces, {args.backend}")
    print("| threads | texts per call | texts/s (median) | vs one text per call |")
    print("|---|---|---|---|")
    for key, v in report["texts_per_s"].items():
        t, b = (int(x.split("=")[1]) for x in key.split())
        print(f"| {t} | {b} | {v['median']} | {v['vs_batch1']} |")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
