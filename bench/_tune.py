"""What every step of ``bench/tune.py`` shares: the fixed train / held-out split, the
document-level nDCG@10, SciFact train as the tuner reads it, the pipeline's chunks, and
the cached legs (dense by the library's embedder, lexical on a real OpenSearch node).

Pure helpers (``in_train``, ``split``, ``ndcg10``, ``doc_order``, ``summary``) need no
data and no services (tests/unit/evaluation/test_tuner_helpers.py)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from _paths import OUT as BENCH_OUT
from _paths import REPO, SCIFACT

OUT = BENCH_OUT / "tune"
GOLDEN_SETS = (REPO / "tests" / "golden", REPO / "tests" / "golden_marine")
QUERY_ENV = {
    "RAGLINE_QUERY_MAX_TOP_K": "100",
    "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
    "OMP_NUM_THREADS": "1",
    "RAGLINE_CACHE_ENABLED": "false",
}
TENANT, GROUP = "scifact", "eval"
DEPTH = 200  # each leg's list is cached this deep; variants cut it shorter
EVAL_DEPTH = 100  # what eval_scifact's legs read: max(overfetch 50, top_k 100)


# ---------------------------------------------------------------- split and metric


def in_train(key: str) -> bool:
    """The fixed split: half of the cases by a hash of their id (never by their content).
    Every fit chooses on this half and reports the other."""
    return hashlib.sha256(key.encode()).digest()[0] % 2 == 0


def split(keys: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the training half, the held-out half), each in the given order."""
    keys = list(keys)
    return [k for k in keys if in_train(k)], [k for k in keys if not in_train(k)]


def ndcg10(ranked: Iterable[str], rel: Mapping[str, int]) -> float:
    """Document-level nDCG@10: the first occurrence of a document counts (a document
    ranks where its best chunk does, as ``max_per_document`` 1 makes it)."""
    seen: list[str] = []
    have: set[str] = set()
    for d in ranked:
        if d not in have:
            have.add(d)
            seen.append(d)
            if len(seen) == 10:
                break
    ideal = sorted(rel.values(), reverse=True)[:10]
    norm = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    if norm <= 0:
        return 0.0
    return sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(seen)) / norm


def doc_order(
    fused: Sequence[tuple[str, float]], doc_of: Mapping[str, str], doc_sum: float = 0.0
) -> list[str]:
    """Documents in the order a fused chunk list gives them: where their first chunk is
    (``doc_sum`` 0, what the service's per-document cap does), or by best chunk +
    ``doc_sum`` x the sum of the document's other chunks' fused scores."""
    if doc_sum == 0:
        return [doc_of[k] for k, _ in fused]
    best: dict[str, float] = {}
    rest: dict[str, float] = {}
    pos: dict[str, int] = {}
    for i, (k, s) in enumerate(fused):
        d = doc_of[k]
        if d not in best:
            best[d], pos[d], rest[d] = s, i, 0.0
        else:
            rest[d] += s
    return sorted(best, key=lambda d: (-(best[d] + doc_sum * rest[d]), pos[d]))


def summary(per: Mapping[str, Mapping[str, float]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Per variant (name -> per-query value): the mean on the training half, the held-out
    half and all of ``keys``, best on the training half first (ties: the given order)."""
    train, held = split(keys)

    def mean(vals: Mapping[str, float], qs: Sequence[str]) -> float:
        return sum(vals[q] for q in qs) / len(qs) if qs else 0.0

    rows = [
        {
            "variant": name,
            "train": mean(vals, train),
            "held_out": mean(vals, held),
            "all": mean(vals, keys),
        }
        for name, vals in per.items()
    ]
    return sorted(rows, key=lambda r: -r["train"])  # stable: ties keep the given order


def print_rows(title: str, rows: Sequence[Mapping[str, Any]]) -> None:
    print(f"\n== {title}")
    print("| variant | train half | held-out half | all |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['train']:.4f} | {r['held_out']:.4f} | {r['all']:.4f} |")


def write(name: str, data: Any) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / name
    path.write_text(json.dumps(data, indent=1))
    return path


# ---------------------------------------------------------------- SciFact


def scifact() -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]]]:
    """The corpus, the train claims that have a relevant document, their judgements
    (document ids as the pipeline names them: ``scifact:<id>``)."""
    from ragline.evaluation.datasets import read_qrels

    corpus = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open()]
    queries = {}
    for line in (SCIFACT / "queries.jsonl").open():
        row = json.loads(line)
        queries[str(row["_id"])] = str(row["text"])
    qrels = read_qrels(SCIFACT / "qrels" / "train.tsv")
    judged = {q: {f"scifact:{d}": s for d, s in r.items() if s > 0} for q, r in qrels.items()}
    return corpus, {q: t for q, t in queries.items() if judged.get(q)}, judged


def chunks() -> list[dict[str, Any]]:
    """SciFact as the pipeline chunks it (chunker + enricher, as bench/chunk_bench.py),
    child chunks only, with the text the embedder embeds; cached."""
    cache = OUT / "scifact_chunks_v2.json"
    if cache.is_file():
        return list(json.loads(cache.read_text()))
    from chunk_bench import scifact as scifact_events

    from ragline.chunking import Chunker, ChunkerSettings
    from ragline.chunking.stage import chunk_event
    from ragline.embedding.texts import embed_text
    from ragline.enrichment import Enricher, EnricherSettings
    from ragline.enrichment.stage import enrich_event
    from ragline.events import ChunkLevel
    from ragline.text import load_token_counter

    conf = ChunkerSettings()
    counter = load_token_counter(conf.tokenizer_path)
    chunker = Chunker(conf, counter)
    enricher = Enricher(
        counter, header_budget=conf.header_budget_tokens, settings=EnricherSettings()
    )
    out: list[dict[str, Any]] = []
    for event, _ in scifact_events(SCIFACT / "corpus.jsonl", None):
        enriched = enrich_event(chunk_event(event, chunker), enricher)
        for c in enriched.chunks:
            if c.level is ChunkLevel.CHILD:
                out.append(
                    {
                        "chunk_id": c.chunk_id,
                        "document_id": event.document_id,
                        "text": c.text,
                        "contextual_header": c.enrichment.contextual_header
                        if c.enrichment
                        else None,
                        "title": event.meta.title,
                        "section_path": " / ".join(c.section_path),
                        "embed_text": embed_text(c),  # what the embedder embeds
                    }
                )
    write(cache.name, out)
    return out


# ---------------------------------------------------------------- legs


def embeddings(items: list[dict[str, Any]], queries: list[str], backend: str) -> tuple[Any, Any]:
    """Chunk vectors (cached by the chunks' ids and texts) and query vectors, by the
    library's embedder (``load_embedder``) with this backend."""
    import time

    import numpy as np

    from ragline.config import EmbeddingModelSettings
    from ragline.embedding.model import load_embedder

    key = hashlib.sha256(
        "\x00".join(c["chunk_id"] + c["embed_text"] for c in items).encode()
    ).hexdigest()[:12]
    model = load_embedder(
        EmbeddingModelSettings(backend=backend), threads=1, batch_size=32, parallel=2
    )
    # keyed by the revision too: a rebuilt artifact (another embedding space under the
    # same backend name) never reads the vectors of the previous one
    space = hashlib.sha256(model.revision.encode()).hexdigest()[:8]
    cache = OUT / f"scifact_emb_{backend}_{key}_{space}.npy"
    if cache.is_file():
        emb = np.load(cache)
    else:
        t0 = time.perf_counter()
        parts = []
        texts = [c["embed_text"] for c in items]
        for i in range(0, len(texts), 256):
            parts.append(model.encode(texts[i : i + 256]))
            done = i + len(parts[-1])
            rate = done / (time.perf_counter() - t0)
            print(f"embedded {done}/{len(texts)} ({rate:.1f} chunks/s)", flush=True)
        emb = np.vstack(parts).astype(np.float32)
        OUT.mkdir(parents=True, exist_ok=True)
        np.save(cache, emb)
        print(f"chunks embedded in {time.perf_counter() - t0:.0f} s", flush=True)
    qemb = model.encode(queries).astype(np.float32)
    return emb, qemb


def lexical_docs(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chunks as the indexer writes them to a tenant index (the fields the lexical
    leg reads: ``body`` is ``copy_to`` of header and text)."""
    return [
        {
            "chunk_id": c["chunk_id"],
            "document_id": c["document_id"],
            "tenant_id": TENANT,
            "acl_groups": [GROUP],
            "text": c["text"],
            "contextual_header": c["contextual_header"],
            "superseded": False,
        }
        for c in items
    ]


def legs_path(backend: str) -> Path:
    return OUT / f"legs_{backend}.json"


def load_legs(backend: str) -> dict[str, Any]:
    """What ``tune.py legs`` wrote: queries, qrels, chunk -> document / text, and per
    query the top ``DEPTH`` of the dense leg and of the lexical leg ([chunk id, score])."""
    path = legs_path(backend)
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `bench/tune.py legs --backend {backend}` first")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def lexical_path(k1: float, b: float) -> Path:
    return OUT / f"lexical_k{k1}_b{b}.json"
