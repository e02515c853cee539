"""Embedder backends side by side (not a test): torch vs ONNX fp32 vs ONNX int8, one run.

Measured on SciFact (``../shared/eval/scifact``, train queries):
- throughput: child chunks/s on the real chunker's + enricher's child texts (contextual
  header included, exactly what the embedder encodes), in model calls of ``--batch`` texts
  like the stage's batcher. The backends take turns round by round (the order rotates),
  so a noisy shared machine slows them alike; the median round is reported;
- tokenization: what one tokenizer pass over the same texts costs, against the model
  (the ONNX path takes pre-tokenized ids; torch's ``encode`` tokenizes inside);
- agreement: cosine of each backend's vectors with torch's (same texts);
- quality: dense nDCG@10 / Recall@100 of every backend, computed directly from the
  embeddings (document level: title + abstract as one text, as MTEB does; not through
  the pipeline, which is measured by ``make eval-scifact``).

    .venv/bin/python bench/embedder_bench.py [--backends torch,onnx,onnx-int8]
        [--chunk-docs 400] [--rounds 3] [--corpus-docs 0 (all)] [--threads N]

Writes bench/out/embedder.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _paths import OUT, SCIFACT, add_quick, scifact

from ragline.embedding.adaptive import model_batch_size
from ragline.embedding.model import Embedder, load_embedder
from ragline.embedding.settings import EmbedderSettings


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open() as fh:
        for line in fh:
            parts = line.split()
            if len(parts) != 3 or parts[0] == "query-id":
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def train_subset(
    n_queries: int, n_docs: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, dict[str, int]]]:
    """SciFact train: (corpus, judged queries, qrels); ``n_queries``: the first N queries
    (0: all); ``n_docs``: the documents judged for them plus the first N others (0: the
    whole corpus)."""
    corpus = load_jsonl(SCIFACT / "corpus.jsonl")
    qrels = load_qrels(SCIFACT / "qrels" / "train.tsv")
    queries = [q for q in load_jsonl(SCIFACT / "queries.jsonl") if q["_id"] in qrels]
    if n_queries:
        queries = queries[:n_queries]
    if n_docs:
        judged = {d for q in queries for d in qrels[q["_id"]]}
        keep = [d for d in corpus if d["_id"] in judged]
        keep += [d for d in corpus if d["_id"] not in judged][:n_docs]
        corpus = keep
    return corpus, queries, qrels


def chunk_texts(docs: list[dict[str, Any]]) -> list[str]:
    """The embedder's input for these abstracts: parse -> chunk -> enrich -> embed_text."""
    from ragline.chunking.chunker import Chunker
    from ragline.chunking.config import ChunkerSettings
    from ragline.embedding.texts import embed_text
    from ragline.enrichment.enricher import Enricher
    from ragline.enrichment.settings import EnricherSettings
    from ragline.events import ChunkLevel, DocChunked, DocumentMeta
    from ragline.hashing import content_hash
    from ragline.parsing import ParserSettings, parse_document
    from ragline.text.tokenizer import load_token_counter

    conf = ChunkerSettings()
    counter = load_token_counter(conf.tokenizer_path)
    chunker = Chunker(conf, counter)
    enricher = Enricher(
        counter, header_budget=conf.header_budget_tokens, settings=EnricherSettings()
    )
    out: list[str] = []
    for d in docs:
        data = f"{d['title']}\n\n{d['text']}".encode()
        meta = DocumentMeta(title=d["title"], mime_type="text/plain")
        doc_id = f"scifact:{d['_id']}"
        digest = content_hash(data)
        chunks = chunker.chunk(
            parse_document(data, meta, ParserSettings()),
            document_id=doc_id,
            content_hash=digest,
            file_path=None,
        )
        event = DocChunked(
            tenant_id="bench",
            document_id=doc_id,
            content_hash=digest,
            source_seq=1,
            meta=meta,
            chunks=tuple(chunks),
        )
        out.extend(embed_text(c) for c in enricher.enrich(event) if c.level is ChunkLevel.CHILD)
    return out


def encode_batched(model: Embedder, texts: list[str], batch: int) -> np.ndarray:
    return np.concatenate([model.encode(texts[i : i + batch]) for i in range(0, len(texts), batch)])


def ndcg10(ranked: list[str], rel: dict[str, int]) -> float:
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def retrieval_quality(
    model: Embedder,
    corpus: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    qrels: dict[str, dict[str, int]],
) -> dict[str, float]:
    doc_ids = [d["_id"] for d in corpus]
    t0 = time.perf_counter()
    dvec = model.encode([f"{d['title']} {d['text']}".strip() for d in corpus])
    qvec = model.encode([q["text"] for q in queries])
    took = time.perf_counter() - t0
    scores = qvec @ dvec.T
    top = np.argsort(-scores, axis=1)[:, :100]
    nd, r100 = [], []
    for qi, q in enumerate(queries):
        rel = qrels[q["_id"]]
        ranked = [doc_ids[j] for j in top[qi]]
        nd.append(ndcg10(ranked, rel))
        r100.append(sum(1 for d in ranked if d in rel) / len(rel))
    return {
        "ndcg@10": float(np.mean(nd)),
        "recall@100": float(np.mean(r100)),
        "queries": len(queries),
        "docs": len(corpus),
        "encode_s": took,
        "texts_per_s": (len(corpus) + len(queries)) / took,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backends", default="torch,onnx,onnx-int8")
    ap.add_argument("--chunk-docs", type=int, default=400, help="abstracts chunked for chunks/s")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64, help="texts per model call")
    ap.add_argument("--corpus-docs", type=int, default=0, help="0: the whole corpus")
    ap.add_argument("--queries", type=int, default=0, help="0: every judged train query")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-quality", action="store_true", help="throughput only")
    ap.add_argument(
        "--quality-backends",
        default="",
        help="nDCG for these only (default: all); onnx stands in for torch when their "
        "vectors agree (cosine_vs_torch), at a third of the cost",
    )
    ap.add_argument("--json", type=Path, default=OUT / "embedder.json")
    add_quick(ap)
    args = ap.parse_args()
    scifact(quick=args.quick)  # or say where to get it (--quick: a skip)
    if args.quick:  # the ONNX backends only: torch is an extra (make bench installs it)
        args.backends, args.chunk_docs, args.rounds = "onnx,onnx-int8", 20, 1
        args.queries, args.corpus_docs = 20, 100
    backends = [b for b in args.backends.split(",") if b]
    corpus, queries, qrels = train_subset(args.queries, args.corpus_docs)

    texts = chunk_texts(corpus[: args.chunk_docs])
    print(f"{len(texts)} child chunks from {args.chunk_docs} abstracts", flush=True)
    report: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores",
        "load_avg_start": os.getloadavg(),
        "chunks": len(texts),
        "batch": args.batch,
        "command": " ".join(sys.argv),
        "backends": {},
    }

    def save() -> None:  # after every step: a partial report survives an interrupted run
        report["load_avg_now"] = os.getloadavg()
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))

    models: dict[str, Embedder] = {}
    for b in backends:
        t0 = time.perf_counter()
        cfg = EmbedderSettings(backend=b, batch_size=args.batch, threads=args.threads)
        models[b] = load_embedder(cfg, threads=cfg.threads, batch_size=model_batch_size(cfg))
        load_s = time.perf_counter() - t0
        models[b].encode(texts[: args.batch])  # warm-up
        report["backends"][b] = {"load_s": load_s, "revision": models[b].revision, "rounds": []}
        print(f"{b}: loaded in {load_s:.1f} s (export included on first use)", flush=True)

    vectors: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        order = backends[r % len(backends) :] + backends[: r % len(backends)]
        for b in order:
            t0 = time.perf_counter()
            vectors[b] = encode_batched(models[b], texts, args.batch)
            rate = len(texts) / (time.perf_counter() - t0)
            report["backends"][b]["rounds"].append(rate)
            print(f"round {r + 1} {b}: {rate:.1f} chunks/s", flush=True)
            save()
    for b in backends:
        rb = report["backends"][b]
        rb["chunks_per_s"] = statistics.median(rb["rounds"])
        if "torch" in vectors:
            cos = (vectors[b] * vectors["torch"]).sum(axis=1)
            rb["cosine_vs_torch"] = {"min": float(cos.min()), "mean": float(cos.mean())}

    # tokenization: one pass of the model's tokenizer over the same texts
    from ragline.embedding.model import default_model_path
    from ragline.embedding.onnx_backend import load_tokenizer

    tok = load_tokenizer(Path(default_model_path()))
    t0 = time.perf_counter()
    for i in range(0, len(texts), args.batch):
        tok.encode_batch(texts[i : i + args.batch])
    tok_s = time.perf_counter() - t0
    report["tokenize"] = {"s": tok_s, "chunks_per_s": len(texts) / tok_s}
    for b in backends:
        model_s = len(texts) / report["backends"][b]["chunks_per_s"]
        report["backends"][b]["tokenize_share"] = tok_s / model_s
    print(f"tokenize alone: {len(texts) / tok_s:.0f} chunks/s", flush=True)

    judged_backends = [b for b in args.quality_backends.split(",") if b] or backends
    for b in [] if args.no_quality else judged_backends:
        q = retrieval_quality(models[b], corpus, queries, qrels)
        report["backends"][b]["scifact_train"] = q
        print(f"{b}: nDCG@10 {q['ndcg@10']:.4f}  R@100 {q['recall@100']:.4f}", flush=True)
        save()
    if "torch" in backends:
        torch_rb = report["backends"]["torch"]
        for b in backends:
            rb = report["backends"][b]
            rb["speedup_vs_torch"] = rb["chunks_per_s"] / torch_rb["chunks_per_s"]
            # per round too: both measured back to back, under the same load
            rb["speedup_per_round"] = [
                x / t for x, t in zip(rb["rounds"], torch_rb["rounds"], strict=True)
            ]
    ref_b = next(
        (b for b in ("torch", "onnx") if "scifact_train" in report["backends"].get(b, {})), None
    )
    if ref_b is not None:
        ref = report["backends"][ref_b]["scifact_train"]["ndcg@10"]
        report["ndcg_reference"] = ref_b
        for b in judged_backends:
            rb = report["backends"][b]
            rb["ndcg_delta_vs_reference"] = rb["scifact_train"]["ndcg@10"] - ref
    save()
    print(
        json.dumps(
            {
                b: {k: v for k, v in r.items() if k != "rounds"}
                for b, r in report["backends"].items()
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
