"""Int8 variants side by side (not a test): the dynamic int8 one text per call on two
intra-op threads (the default before issue 35), the same run ``--parallel`` texts at once
on one thread each (the default since), the fused-attention dynamic int8 run the same way
(``onnx-int8-fused``), static int8 batched and fp32 batched, one process, one machine, on
real chunks (issue 35). Each round also records the process's CPU seconds per chunk.

- throughput: SciFact child chunks as the embedder encodes them (contextual header +
  child text, the real chunker and enricher: ~60-240 word pieces), through each
  variant's ``encode`` in calls of ``--batch`` texts like the stage's batcher (the
  dynamic variant runs them one text per ONNX call inside, as it must, one after another
  or ``--parallel`` at once; the others length-bucket each call). Rounds rotate the
  order; the median round and the per-round ratio to the "before" row are reported (a
  loaded machine slows all alike; a timing run wants its own scheduler autogroup at a
  raised nice, ``setsid`` + ``/proc/self/autogroup``: the report records both);
- agreement: cosine of each variant's chunk vectors with fp32's; batch independence:
  the largest difference between a text embedded alone and inside a mixed batch;
- quality: dense nDCG@10 on SciFact train, the corpus (title + abstract per document)
  encoded directly by each variant.

    .venv/bin/python bench/quant_bench.py [--quick] [--threads 2]
    .venv/bin/python bench/quant_bench.py --calibrate   # (re)writes the stored ranges

Writes bench/out/quant.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _paths import OUT, SCIFACT, add_quick, scifact
from embedder_bench import (
    chunk_texts,
    load_jsonl,
    load_qrels,
    retrieval_quality,
    train_subset,
)

from ragline.embedding.model import default_model_path, model_revision
from ragline.embedding.onnx_backend import OnnxEmbedder, default_onnx_dir, onnx_artifact

# row -> (variant, texts at once, intra-op threads: None = --threads)
ROWS: dict[str, tuple[str, int, int | None]] = {
    "int8-alone": ("int8-dynamic", 1, None),
    "int8-parallel": ("int8-dynamic", 0, 1),  # 0: --parallel
    "int8-fused": ("int8-fused", 0, 1),
    "int8-static": ("int8", 1, None),
    "fp32": ("fp32", 1, None),
}
LABELS = {
    "int8-alone": "onnx-int8, 1 text per call x {threads} threads (before)",
    "int8-parallel": "onnx-int8, {parallel} texts at once x 1 thread (default)",
    "int8-fused": "onnx-int8-fused, {parallel} texts at once x 1 thread",
    "int8-static": "onnx-int8-static, length-bucketed batches",
    "fp32": "onnx (fp32), length-bucketed batches",
}
# the calibration texts: child chunks of these corpus documents (not the ones the
# throughput rounds use) and the first SciFact queries not judged in train (short texts: the query
# service embeds with the same model); one text per run
CALIBRATION_DOCS = slice(2000, 2060)
CALIBRATION_CHUNKS = 96
CALIBRATION_QUERIES = 32


def calibrate() -> Path:
    from ragline.embedding.quantize import activation_ranges, calibration_path, save_ranges

    model_dir = Path(default_model_path())
    revision = model_revision(model_dir)
    corpus = load_jsonl(SCIFACT / "corpus.jsonl")
    texts = chunk_texts(corpus[CALIBRATION_DOCS])[:CALIBRATION_CHUNKS]
    chunks = len(texts)
    train = load_qrels(SCIFACT / "qrels" / "train.tsv")
    queries = [q["text"] for q in load_jsonl(SCIFACT / "queries.jsonl") if q["_id"] not in train]
    texts += queries[:CALIBRATION_QUERIES]
    fp32 = onnx_artifact(model_dir, default_onnx_dir(), revision, variant="fp32")
    emb = OnnxEmbedder(variant="fp32")
    ranges = activation_ranges(fp32.path, emb.tokenize(texts))
    dest = calibration_path(revision)
    save_ranges(
        dest,
        ranges,
        {
            "model_revision": revision,
            "fp32_sha256": fp32.sha256,
            "texts": f"SciFact corpus[{CALIBRATION_DOCS.start}:{CALIBRATION_DOCS.stop}] "
            f"first {chunks} child chunks (header + text) + first "
            f"{CALIBRATION_QUERIES} queries not in train qrels, one text per run",
            "method": "min/max per tensor, rounded outwards to float16",
            "written_by": "bench/quant_bench.py --calibrate",
        },
    )
    print(f"{len(ranges)} ranges from {len(texts)} texts -> {dest}")
    return dest


def _autogroup() -> str:
    """This process's scheduler autogroup and its nice (Linux with autogroups: the nice
    value of a process only orders it within its group; a timing run needs its own)."""
    try:
        return Path("/proc/self/autogroup").read_text().strip()
    except OSError:
        return "n/a"


def _cpu_s() -> float:
    """This process's CPU seconds so far (user + system, every thread)."""
    t = os.times()
    return t.user + t.system


def encode_calls(model: OnnxEmbedder, texts: list[str], batch: int) -> np.ndarray:
    return np.concatenate([model.encode(texts[i : i + batch]) for i in range(0, len(texts), batch)])


def independence(model: OnnxEmbedder, texts: list[str]) -> float:
    """Largest |difference| between each text alone and inside a mixed-length batch."""
    alone = np.concatenate([model.encode([t]) for t in texts])
    mixed = list(range(len(texts)))[::-1]
    batched = model.encode([texts[i] for i in mixed])[np.argsort(mixed)]
    return float(np.abs(alone - batched).max())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calibrate", action="store_true", help="write the stored ranges")
    ap.add_argument("--chunk-docs", type=int, default=300, help="abstracts chunked")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64, help="texts per encode call")
    ap.add_argument("--threads", type=int, default=2, help="ONNX Runtime intra-op threads")
    ap.add_argument("--parallel", type=int, default=2, help="texts at once (int8-parallel)")
    ap.add_argument("--corpus-docs", type=int, default=0, help="0: the whole corpus")
    ap.add_argument("--queries", type=int, default=0, help="0: every judged train query")
    ap.add_argument(
        "--quality-rows",
        default="",
        help="rows whose nDCG is computed (comma-separated; fp32 always; default: all)",
    )
    ap.add_argument("--json", type=Path, default=OUT / "quant.json")
    add_quick(ap)  # here: 20 abstracts, one round, 60 documents, 30 queries
    args = ap.parse_args()
    scifact(quick=args.quick)  # or say where to get it (--quick: a skip)
    if args.calibrate:
        calibrate()
        return 0
    if args.quick:
        args.chunk_docs, args.rounds = 20, 1
        args.corpus_docs, args.queries = args.corpus_docs or 60, args.queries or 30
    corpus, queries, qrels = train_subset(args.queries, args.corpus_docs)
    texts = chunk_texts(load_jsonl(SCIFACT / "corpus.jsonl")[: args.chunk_docs])
    report: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores",
        "load_avg_start": os.getloadavg(),
        "chunks": len(texts),
        "batch": args.batch,
        "threads": args.threads,
        "parallel": args.parallel,
        "priority": {"nice": os.nice(0), "autogroup": _autogroup()},
        "command": " ".join(sys.argv),
        "variants": {},
    }
    print(f"{len(texts)} child chunks from {args.chunk_docs} abstracts; load {os.getloadavg()}")
    models: dict[str, OnnxEmbedder] = {}
    for row, (variant, parallel, threads) in ROWS.items():
        n_par = parallel or args.parallel
        models[row] = OnnxEmbedder(
            variant=variant, threads=threads or args.threads, batch_size=args.batch,
            parallel=n_par,
        )  # fmt: skip
        label = LABELS[row].format(threads=args.threads, parallel=n_par)
        models[row].encode(texts[:8])  # warm-up
        report["variants"][row] = {
            "backend": models[row].backend, "label": label, "revision": models[row].revision,
            "parallel": n_par, "rounds": [], "cpu_ms_per_chunk_rounds": [],
        }  # fmt: skip
    rows = list(ROWS)
    vectors: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        order = rows[r % len(rows) :] + rows[: r % len(rows)]
        for v in order:
            t0, c0 = time.perf_counter(), _cpu_s()
            vectors[v] = encode_calls(models[v], texts, args.batch)
            rate = len(texts) / (time.perf_counter() - t0)
            cpu_ms = (_cpu_s() - c0) / len(texts) * 1000
            report["variants"][v]["rounds"].append(rate)
            report["variants"][v]["cpu_ms_per_chunk_rounds"].append(cpu_ms)
            print(f"round {r + 1} {v}: {rate:.1f} chunks/s, {cpu_ms:.1f} CPU-ms/chunk", flush=True)
    dyn_rounds = report["variants"]["int8-alone"]["rounds"]
    probe = texts[:: max(1, len(texts) // 24)][:24]
    for v in rows:
        rv = report["variants"][v]
        rv["same_vectors_as_int8_alone"] = bool(np.array_equal(vectors[v], vectors["int8-alone"]))
        rv["chunks_per_s"] = statistics.median(rv["rounds"])
        rv["cpu_ms_per_chunk"] = statistics.median(rv["cpu_ms_per_chunk_rounds"])
        pairs = zip(rv["rounds"], dyn_rounds, strict=True)
        rv["ratio_vs_dynamic_per_round"] = [a / b for a, b in pairs]
        rv["ratio_vs_dynamic"] = statistics.median(rv["ratio_vs_dynamic_per_round"])
        cos = (vectors[v] * vectors["fp32"]).sum(axis=1)
        rv["cosine_vs_fp32"] = {"min": float(cos.min()), "mean": float(cos.mean())}
        rv["alone_vs_batched_max_abs"] = independence(models[v], probe)
    quality_rows = args.quality_rows.split(",") if args.quality_rows else rows
    for v in rows:
        rv = report["variants"][v]
        alone = report["variants"]["int8-alone"]
        if (
            rv["same_vectors_as_int8_alone"]
            and v != "int8-alone"
            and "scifact_train_dense" in alone
        ):
            rv["scifact_train_dense"] = alone["scifact_train_dense"]  # the same vectors
        elif v in quality_rows or v == "fp32":
            rv["scifact_train_dense"] = retrieval_quality(models[v], corpus, queries, qrels)
        else:
            continue
        print(f"{v}: dense nDCG@10 {rv['scifact_train_dense']['ndcg@10']:.4f}", flush=True)
    ref = report["variants"]["fp32"]["scifact_train_dense"]["ndcg@10"]
    for v in rows:
        rv = report["variants"][v]
        if "scifact_train_dense" in rv:
            rv["ndcg_delta_vs_fp32"] = rv["scifact_train_dense"]["ndcg@10"] - ref
    report["load_avg_end"] = os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(f"\n{len(texts)} real chunks, batch {args.batch}, {args.threads} threads, "
          f"load {report['load_avg_start'][0]:.1f} -> {report['load_avg_end'][0]:.1f}")  # fmt: skip
    print("| variant | chunks/s | x before (per round) | CPU-ms/chunk | cos vs fp32 min / mean "
          "| alone vs batch | same vectors as before | nDCG@10 | delta vs fp32 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for v in rows:
        rv = report["variants"][v]
        q = rv.get("scifact_train_dense", {"ndcg@10": float("nan")})
        print(
            f"| {rv['label']} | {rv['chunks_per_s']:.1f} | {rv['ratio_vs_dynamic']:.2f} ("
            + " / ".join(f"{x:.2f}" for x in rv["ratio_vs_dynamic_per_round"])
            + f") | {rv['cpu_ms_per_chunk']:.1f} | {rv['cosine_vs_fp32']['min']:.4f} / "
            f"{rv['cosine_vs_fp32']['mean']:.4f} | "
            f"{rv['alone_vs_batched_max_abs']:.1e} | "
            f"{'yes' if rv['same_vectors_as_int8_alone'] else 'no'} | {q['ndcg@10']:.4f} | "
            f"{rv.get('ndcg_delta_vs_fp32', float('nan')):+.4f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
