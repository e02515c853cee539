"""SciFact hybrid offline, lexical scored by a real OpenSearch 2.19 node, every step
recorded (a table on stdout + JSON under bench/out/tune/).

    .venv/bin/python bench/tune_hybrid.py legs [--backend onnx-int8]
        SciFact train as the pipeline chunks it (chunker + enricher), embedded by the
        library's embedder (``load_embedder``, the texts ``embedding.texts.embed_text``
        makes: contextual header, newline, text), the queries embedded by the same model;
        per query the top 100 of two legs: dense (exact cosine) and lexical on a real
        OpenSearch node (the stack's, bench/_opensearch.py) with the production mapping
        and query -> bench/out/tune/legs_<backend>.json
    .venv/bin/python bench/tune_hybrid.py search [--backend onnx-int8]
        fusion variants over those legs (normalisation min-max / z-score / RRF k, leg
        weights, over-fetch depth, document aggregation max vs max + a small sum), each
        through the library's fusion and exact-identifier boost; chosen on the fixed train
        half of the queries (tune_retrieval.in_train), reported on the other half, for
        the lexical leg -> bench/out/tune/hybrid_<backend>.json

    .venv/bin/python bench/tune_hybrid.py feedback | scores | bm25
        what else the two legs allow, each against the shipped fusion, chosen on the train
        half and reported on the other: dense pseudo-relevance feedback (the first pass's
        top chunks averaged into the query vector, a second dense search), a leg's
        missing score (filled in with the true cosine / BM25, a one-leg penalty, z from
        the mean), and BM25's k1 / b (one index per pair)
        -> bench/out/tune/{feedback,scores,bm25}_<backend>.json

    .venv/bin/python bench/tune_hybrid.py abstain
        every claim's final list (the defaults) through the library's abstention rules:
        which answerable claims abstain, old vs new identifier matching
        -> bench/out/tune/abstain_scifact_<backend>_<lexical>.json (for tune_terms idents)

The document ranking is what ``eval_scifact`` measures (``max_per_document`` 1, ``top_k``
100): a document ranks where its first chunk does in the fused order.
"""

from __future__ import annotations

import argparse
import collections
import functools
import hashlib
import itertools
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from _paths import OUT as BENCH_OUT
from tune_retrieval import _chunks, _os_index, _scifact, in_train, ndcg10

OUT = BENCH_OUT / "tune"
DEPTH = 100


def _flat(s: str | None) -> str:
    return " ".join((s or "").split())


# ---------------------------------------------------------------- legs


def _embed(chunks: list[dict[str, Any]], queries: list[str], backend: str) -> tuple[Any, Any]:
    import numpy as np

    from ragline.config import EmbeddingModelSettings
    from ragline.embedding.model import load_embedder

    key = hashlib.sha256(
        "\x00".join(c["chunk_id"] + c["embed_text"] for c in chunks).encode()
    ).hexdigest()[:12]
    cache = OUT / f"scifact_emb_{backend}_{key}.npy"
    model = load_embedder(EmbeddingModelSettings(backend=backend), threads=1, batch_size=32)
    if cache.is_file():
        emb = np.load(cache)
    else:
        t0 = time.perf_counter()
        parts = []
        texts = [c["embed_text"] for c in chunks]
        for i in range(0, len(texts), 256):
            parts.append(model.encode(texts[i : i + 256]))
            print(f"embedded {i + len(parts[-1])}/{len(texts)}", flush=True)
        emb = np.vstack(parts).astype(np.float32)
        np.save(cache, emb)
        print(f"chunks embedded in {time.perf_counter() - t0:.0f} s", flush=True)
    qemb = model.encode(queries).astype(np.float32)
    return emb, qemb


@functools.cache
def _node() -> Any:
    """One real OpenSearch node per process (the k1 / b grid indexes 20-odd times)."""
    import atexit

    from _opensearch import OpenSearchNode

    node = OpenSearchNode.start()
    atexit.register(node.close)
    return node


def _opensearch(
    chunks: list[dict[str, Any]],
    queries: dict[str, str],
    k1: float | None = None,
    b: float | None = None,
) -> dict[str, list[Any]]:
    """The production query on a real OpenSearch 2.19 index of ``chunks`` (the production
    mapping; ``body``'s k1 / b replaced when given)."""
    import httpx
    from _opensearch import mapping

    from ragline.auth.principal import Principal
    from ragline.retrieval.lexical import build_query

    url = _node().url
    principal = Principal(tenant="scifact", groups=("eval",), subject="tune")
    src = [
        {
            "chunk_id": c["chunk_id"],
            "document_id": c["document_id"],
            "tenant_id": "scifact",
            "acl_groups": ["eval"],
            "text": c["text"],
            "contextual_header": c["contextual_header"],
        }
        for c in chunks
    ]
    _os_index(url, "legs", mapping(k1, b), src)
    out: dict[str, list[Any]] = {}
    with httpx.Client(timeout=120) as client:
        for q, text in queries.items():
            body = build_query(principal, text, [], limit=DEPTH)
            hits = client.post(f"{url}/legs/_search", json=body).json()
            out[q] = [[h["_source"]["chunk_id"], float(h["_score"])] for h in hits["hits"]["hits"]]
    return out


def _legs(args: argparse.Namespace) -> int:
    import numpy as np

    _, queries, qrels = _scifact()
    chunks = _chunks()
    print(f"{len(chunks)} chunks, {len(queries)} queries", flush=True)
    qids = list(queries)
    emb, qemb = _embed(chunks, [queries[q] for q in qids], args.backend)
    np.save(OUT / f"scifact_qemb_{args.backend}.npy", qemb)
    (OUT / "scifact_qids.json").write_text(json.dumps(qids))
    sims = qemb @ emb.T
    dense = {}
    for i, q in enumerate(qids):
        top = np.argsort(-sims[i])[:DEPTH]
        dense[q] = [[chunks[j]["chunk_id"], float(sims[i][j])] for j in top]
    t0 = time.perf_counter()
    lexical = _opensearch(chunks, queries)
    print(f"opensearch: {time.perf_counter() - t0:.0f} s", flush=True)
    data = {
        "backend": args.backend,
        "chunks": len(chunks),
        "queries": queries,
        "qrels": qrels,
        "doc_of": {c["chunk_id"]: c["document_id"] for c in chunks},
        "text_of": {c["chunk_id"]: c["text"] for c in chunks},
        "dense": dense,
        "opensearch": lexical,
    }
    path = OUT / f"legs_{args.backend}.json"
    path.write_text(json.dumps(data))
    print(f"written {path}")
    return 0


# ---------------------------------------------------------------- search


@dataclass(frozen=True)
class Variant:
    fusion: str  # "minmax" | "zscore" | "rrf"
    w_dense: float = 1.0
    w_lexical: float = 1.0
    depth: int = 50
    rrf_k: int = 60
    doc_sum: float = 0.0  # document score = best chunk + doc_sum * the others' sum

    @property
    def name(self) -> str:
        norm = f"rrf k={self.rrf_k}" if self.fusion == "rrf" else self.fusion
        agg = "max" if self.doc_sum == 0 else f"max+{self.doc_sum}*sum"
        return f"{norm} wd={self.w_dense} wl={self.w_lexical} depth={self.depth} {agg}"


class _Row:
    def __init__(self, text: str) -> None:
        self.text = text


def _fused(
    v: Variant,
    dense: Sequence[tuple[str, float]],
    lex: Sequence[tuple[str, float]],
    text_of: dict[str, str],
    query: str,
) -> list[tuple[str, float]]:
    """The chunk order the query service makes (retrieval/candidates.py ``fuse`` +
    ``_exact_refuse``), for this variant's settings."""
    from ragline.retrieval.abstain import identifiers
    from ragline.retrieval.candidates import _exact_refuse, fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.lexical import LexicalHit
    from ragline.retrieval.settings import RankingSettings

    settings = _SETTINGS.get(v)
    if settings is None:
        settings = _SETTINGS[v] = RankingSettings(
            fusion="rrf" if v.fusion == "rrf" else "score",
            rrf_k=v.rrf_k,
            weight_dense=v.w_dense,
            weight_lexical=v.w_lexical,
            **({"score_norm": v.fusion} if v.fusion in ("minmax", "zscore") else {}),
        )
    key = (id(dense), id(lex), v.depth)
    cached = _HITS.get(key)
    if cached is None:
        dense_hits = [
            DenseHit(chunk_id=c, similarity=s, rank=i + 1)
            for i, (c, s) in enumerate(dense[: v.depth])
        ]
        lex_hits = [
            LexicalHit(chunk_id=c, score=s, rank=i + 1) for i, (c, s) in enumerate(lex[: v.depth])
        ]
        cached = _HITS[key] = (dense_hits, lex_hits)
    dh, lh = cached
    fused = fuse(dh, lh, settings)
    idents = _IDENTS.get(query)
    if idents is None:
        idents = _IDENTS[query] = identifiers(query)
    if idents:
        rows = {f.key: _Row(text_of.get(f.key, "")) for f in fused}
        fused = _exact_refuse(fused, rows, idents, settings)  # type: ignore[arg-type]
    return [(f.key, f.score) for f in fused]


_SETTINGS: dict[Variant, Any] = {}
_HITS: dict[tuple[int, int, int], tuple[list[Any], list[Any]]] = {}
_IDENTS: dict[str, set[str]] = {}


def _ndcg10(docs: list[str], rel: dict[str, int]) -> float:
    """tune_retrieval.ndcg10 (first occurrence of a document counts), stopping at 10."""
    seen: list[str] = []
    have: set[str] = set()
    for d in docs:
        if d not in have:
            have.add(d)
            seen.append(d)
            if len(seen) == 10:
                break
    return ndcg10(seen, rel)


def _doc_order(fused: list[tuple[str, float]], doc_of: dict[str, str], doc_sum: float) -> list[str]:
    if doc_sum == 0:
        return [doc_of[k] for k, _ in fused]
    best: dict[str, float] = {}
    rest: dict[str, float] = collections.defaultdict(float)
    pos: dict[str, int] = {}
    for i, (k, s) in enumerate(fused):
        d = doc_of[k]
        if d not in best:
            best[d], pos[d] = s, i
        else:
            rest[d] += s
    return sorted(best, key=lambda d: (-(best[d] + doc_sum * rest[d]), pos[d]))


def _search(args: argparse.Namespace) -> int:
    data = _load_legs(args.backend)
    queries: dict[str, str] = data["queries"]
    qrels: dict[str, dict[str, int]] = data["qrels"]
    doc_of: dict[str, str] = data["doc_of"]
    text_of: dict[str, str] = data["text_of"]
    dense = {q: [(c, s) for c, s in v] for q, v in data["dense"].items()}
    train = [q for q in queries if in_train(q)]
    held = [q for q in queries if not in_train(q)]
    print(f"queries: train {len(train)}, held-out {len(held)}", flush=True)

    def mean(vals: list[float]) -> float:
        return sum(vals) / len(vals) if vals else 0.0

    def leg_only(leg: dict[str, list[tuple[str, float]]], qs: list[str]) -> float:
        return mean([ndcg10([doc_of[c] for c, _ in leg.get(q, [])], qrels[q]) for q in qs])

    variants = [
        Variant(fusion=f, w_dense=wd, depth=dp, doc_sum=ds)
        for f, wd, dp, ds in itertools.product(
            ("minmax", "zscore"),
            (0.5, 0.75, 1.0, 1.25, 1.5, 2.0),
            (20, 50, 100),
            (0.0, 0.1),
        )
    ] + [
        Variant(fusion="rrf", rrf_k=k, w_dense=wd, depth=dp)
        for k, wd, dp in itertools.product((20, 60), (1.0, 1.5), (50, 100))
    ]
    out: dict[str, Any] = {"backend": data["backend"], "chunks": data["chunks"], "legs": {}}
    for lex_name in args.lexical.split(","):
        lex = {q: [(c, s) for c, s in v] for q, v in data[lex_name].items()}
        if not lex:
            continue
        t0 = time.perf_counter()
        per: dict[Variant, dict[str, float]] = {v: {} for v in variants}
        for n, q in enumerate(queries):
            lq = lex.get(q, [])
            for v in variants:
                fused = _fused(v, dense[q], lq, text_of, queries[q])
                per[v][q] = _ndcg10(_doc_order(fused, doc_of, v.doc_sum), qrels[q])
            _HITS.clear()
            if n % 100 == 0:
                print(f"{lex_name}: {n}/{len(queries)} queries", flush=True)
        default = Variant(fusion="minmax")
        best = max(variants, key=lambda v: (mean([per[v][q] for q in train]), v == default))
        ranked = sorted(variants, key=lambda v: -mean([per[v][q] for q in train]))

        def row(v: Variant, per: dict[Variant, dict[str, float]] = per) -> dict[str, Any]:
            return {
                "variant": v.name,
                "train": mean([per[v][q] for q in train]),
                "held_out": mean([per[v][q] for q in held]),
                "all": mean([per[v][q] for q in queries]),
            }

        res = {
            "lexical_only": {
                p: leg_only(lex, qs) for p, qs in (("train", train), ("held_out", held))
            }
            | {"all": leg_only(lex, list(queries))},
            "dense_only": {
                p: leg_only(dense, qs) for p, qs in (("train", train), ("held_out", held))
            }
            | {"all": leg_only(dense, list(queries))},
            "default": row(default),
            "chosen": row(best),
            "top10_on_train": [row(v) for v in ranked[:10]],
            "every": [row(v) for v in variants],
        }
        out["legs"][lex_name] = res
        print(f"\n== lexical leg: {lex_name} ({time.perf_counter() - t0:.0f} s)")
        print(f"lexical only: {res['lexical_only']}")
        print(f"dense only:   {res['dense_only']}")
        print("| variant | train | held-out | all |\n|---|---|---|---|")
        for r in [res["default"], *res["top10_on_train"]]:
            print(f"| {r['variant']} | {r['train']:.4f} | {r['held_out']:.4f} | {r['all']:.4f} |")
    path = OUT / f"hybrid_{data['backend']}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"written {path}")
    return 0


def _split(queries: dict[str, str]) -> tuple[list[str], list[str]]:
    """The fixed training half (chosen on) and the held-out half (reported on)."""
    return [q for q in queries if in_train(q)], [q for q in queries if not in_train(q)]


def _report(
    per: dict[str, dict[str, float]], queries: dict[str, str], title: str, t0: float
) -> list[dict[str, Any]]:
    """Per variant: mean nDCG@10 on the training half, the held-out half and all; printed
    as a table, best on the training half first."""
    train, held = _split(queries)

    def mean(vals: dict[str, float], qs: Sequence[str]) -> float:
        return sum(vals[q] for q in qs) / len(qs) if qs else 0.0

    rows = [
        {
            "variant": name,
            "train": mean(vals, train),
            "held_out": mean(vals, held),
            "all": mean(vals, list(queries)),
        }
        for name, vals in per.items()
    ]
    rows.sort(key=lambda r: -r["train"])
    print(f"\n== {title} ({time.perf_counter() - t0:.0f} s)")
    print("| variant | train | held-out | all |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['train']:.4f} | {r['held_out']:.4f} | {r['all']:.4f} |")
    return rows


# ---------------------------------------------------------------- feedback


@dataclass(frozen=True)
class Feedback:
    """Dense pseudo-relevance feedback (Rocchio on the query vector): the first pass's
    top ``k`` chunks (of the fused list, or of the dense list alone) are averaged, the
    query vector becomes ``alpha * q + (1 - alpha) * centroid`` (renormalised), and the
    dense leg is searched again with it before the final fusion."""

    source: str  # "hybrid" | "dense"
    k: int
    alpha: float

    @property
    def name(self) -> str:
        return f"feedback {self.source} k={self.k} alpha={self.alpha}"


def _feedback(args: argparse.Namespace) -> int:
    import numpy as np

    data = _load_legs(args.backend)
    queries: dict[str, str] = data["queries"]
    qrels: dict[str, dict[str, int]] = data["qrels"]
    doc_of: dict[str, str] = data["doc_of"]
    text_of: dict[str, str] = data["text_of"]
    vec = _vectors(args.backend)
    emb, qemb, qidx, cidx = vec.emb, vec.qemb, vec.qidx, vec.cidx
    ids = [c["chunk_id"] for c in vec.chunks]
    base = Variant(fusion="zscore", depth=args.depth)
    variants = [
        Feedback(source=src, k=k, alpha=a)
        for src, k, a in itertools.product(
            ("hybrid", "dense"), (2, 3, 5, 8), (0.5, 0.6, 0.7, 0.8, 0.9)
        )
    ]

    out: dict[str, Any] = {"backend": data["backend"], "depth": args.depth, "legs": {}}
    for lex_name in args.lexical.split(","):
        lex = {q: [(c, s) for c, s in v] for q, v in data[lex_name].items()}
        if not lex:
            continue
        t0 = time.perf_counter()
        per: dict[str, dict[str, float]] = collections.defaultdict(dict)
        for n, q in enumerate(queries):
            dense = [(c, s) for c, s in data["dense"][q]]
            lq = lex.get(q, [])
            _HITS.clear()
            first = _fused(base, dense, lq, text_of, queries[q])
            per["no feedback"][q] = _ndcg10([doc_of[k] for k, _ in first], qrels[q])
            qv = qemb[qidx[q]]
            for v in variants:
                src = first if v.source == "hybrid" else dense
                fb = emb[[cidx[k] for k, _ in src[: v.k]]].mean(axis=0)
                fb /= np.linalg.norm(fb) or 1.0
                q2 = v.alpha * qv + (1 - v.alpha) * fb
                q2 /= np.linalg.norm(q2) or 1.0
                sims = emb @ q2
                top = np.argpartition(-sims, DEPTH)[:DEPTH]
                top = top[np.argsort(-sims[top])]
                dense2 = [(ids[j], float(sims[j])) for j in top]
                _HITS.clear()
                fused = _fused(base, dense2, lq, text_of, queries[q])
                per[v.name][q] = _ndcg10([doc_of[k] for k, _ in fused], qrels[q])
                if lex_name == args.lexical.split(",")[0]:
                    per[v.name + " (dense leg alone)"][q] = _ndcg10(
                        [doc_of[c] for c, _ in dense2], qrels[q]
                    )
            if n % 100 == 0:
                print(f"{lex_name}: {n}/{len(queries)} queries", flush=True)
        out["legs"][lex_name] = _report(per, queries, f"lexical leg: {lex_name}", t0)
    path = OUT / f"feedback_{data['backend']}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"written {path}")
    return 0


# ---------------------------------------------------------------- missing scores, BM25


def _zfuse(
    legs: dict[str, list[tuple[str, float]]], *, center: str, one_leg_penalty: float
) -> list[str]:
    """z-score fusion as retrieval/fusion.py with two knobs it does not have: the origin
    (the list's minimum, as shipped, or its mean) and a penalty for a chunk only one leg
    found (0 = as shipped: absent counts as the list's origin)."""
    score: dict[str, float] = collections.defaultdict(float)
    found: dict[str, int] = collections.defaultdict(int)
    for items in legs.values():
        if not items:
            continue
        vals = [v for _, v in items]
        mean = sum(vals) / len(vals)
        sd = (sum((v - mean) ** 2 for v in vals) / len(vals)) ** 0.5 or 1.0
        origin = min(vals) if center == "min" else mean
        for c, v in items:
            score[c] += (v - origin) / sd
            found[c] += 1
    both = sum(1 for items in legs.values() if items) > 1
    for c in score:
        if both and found[c] == 1:
            score[c] -= one_leg_penalty
    return sorted(score, key=lambda c: -score[c])


def _scores(args: argparse.Namespace) -> int:
    """What a leg's missing score should be: the shipped rule (absent = the list's
    minimum), the true cosine of a lexical-only chunk filled in (the query service knows
    it after hydration), BM25 ranks 51-100 filled in for dense-only chunks, a penalty for
    one-leg chunks, and z measured from the mean instead of the minimum."""

    data = _load_legs(args.backend)
    queries: dict[str, str] = data["queries"]
    qrels: dict[str, dict[str, int]] = data["qrels"]
    doc_of: dict[str, str] = data["doc_of"]
    vec = _vectors(args.backend)
    emb, qemb, qidx, cidx = vec.emb, vec.qemb, vec.qidx, vec.cidx
    out: dict[str, Any] = {"backend": data["backend"], "legs": {}}
    for lex_name in args.lexical.split(","):
        t0 = time.perf_counter()
        per: dict[str, dict[str, float]] = collections.defaultdict(dict)
        for q in queries:
            full = [(c, s) for c, s in data[lex_name].get(q, [])]
            for depth in (50, 100):
                dl = [(c, s) for c, s in data["dense"][q][:depth]]
                ll = full[:depth]
                have_d, have_l, bm25 = {c for c, _ in dl}, {c for c, _ in ll}, dict(full)
                extra = [c for c, _ in ll if c not in have_d]
                sims = emb[[cidx[c] for c in extra]] @ qemb[qidx[q]] if extra else []
                filled_d = dl + [(c, float(x)) for c, x in zip(extra, sims, strict=True)]
                filled_l = ll + [(c, bm25[c]) for c, _ in dl if c not in have_l and c in bm25]
                variants: dict[str, dict[str, list[tuple[str, float]]]] = {
                    "shipped": {"d": dl, "l": ll},
                    "cosine filled in": {"d": filled_d, "l": ll},
                    "BM25 filled in": {"d": dl, "l": filled_l},
                    "both filled in": {"d": filled_d, "l": filled_l},
                }
                for name, legs in variants.items():
                    order = _zfuse(legs, center="min", one_leg_penalty=0.0)
                    per[f"depth {depth}, {name}"][q] = _ndcg10([doc_of[c] for c in order], qrels[q])
                for center, pen in itertools.product(("min", "mean"), (0.25, 0.5, 1.0, 1.5)):
                    order = _zfuse({"d": dl, "l": ll}, center=center, one_leg_penalty=pen)
                    per[f"depth {depth}, z from {center}, one-leg penalty {pen}"][q] = _ndcg10(
                        [doc_of[c] for c in order], qrels[q]
                    )
        out["legs"][lex_name] = _report(per, queries, f"lexical leg: {lex_name}", t0)
    path = OUT / f"scores_{data['backend']}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"written {path}")
    return 0


def _bm25(args: argparse.Namespace) -> int:
    """BM25's k1 and b (the index's similarity setting in production): the
    lexical leg alone and fused with the dense leg (z-score, depth 50) for each pair."""
    from tune_retrieval import ndcg10 as doc_ndcg10

    data = _load_legs(args.backend)
    queries: dict[str, str] = data["queries"]
    qrels: dict[str, dict[str, int]] = data["qrels"]
    doc_of: dict[str, str] = data["doc_of"]
    chunks = _chunks()
    t0 = time.perf_counter()
    per: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for k1, b in itertools.product((0.6, 0.9, 1.2, 1.5, 2.0), (0.3, 0.5, 0.75, 0.9)):
        lex = _opensearch(chunks, queries, k1=k1, b=b)
        for q in queries:
            ll = [(c, float(s)) for c, s in lex.get(q, [])]
            per[f"k1 {k1} b {b}: lexical alone"][q] = doc_ndcg10(
                [doc_of[c] for c, _ in ll], qrels[q]
            )
            order = _zfuse(
                {"d": [(c, s) for c, s in data["dense"][q][:50]], "l": ll[:50]},
                center="min",
                one_leg_penalty=0.0,
            )
            per[f"k1 {k1} b {b}: hybrid"][q] = _ndcg10([doc_of[c] for c in order], qrels[q])
        print(f"k1 {k1} b {b} done", flush=True)
    rows = _report(per, queries, "OpenSearch BM25 k1 / b", t0)
    path = OUT / f"bm25_{data['backend']}.json"
    path.write_text(json.dumps({"backend": data["backend"], "rows": rows}, indent=1))
    print(f"written {path}")
    return 0


# ---------------------------------------------------------------- plot


def _plot(args: argparse.Namespace) -> int:
    """One picture of every search: per family, the shipped fusion and the variant best
    on the training half, each on the training half, the held-out half and all 809,
    against the 0.745 target -> bench/out/tune/searches_<backend>.png"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = args.backend

    def load(name: str) -> Any:
        path = OUT / f"{name}_{b}.json"
        return json.loads(path.read_text()) if path.is_file() else None

    bars: list[tuple[str, dict[str, float]]] = []
    hybrid = load("hybrid")
    if hybrid is not None:
        for leg in ("opensearch",):
            if leg in hybrid["legs"]:
                res = hybrid["legs"][leg]
                shipped = next(
                    r
                    for r in res["every"]
                    if r["variant"].startswith("zscore wd=1.0 wl=1.0 depth=50 max")
                )
                bars.append((f"shipped\n{leg}", shipped))
                bars.append((f"grid best\n{leg}", res["chosen"]))
    for name, label in (("feedback", "feedback"), ("scores", "missing score")):
        data = load(name)
        if data is not None:
            for leg, rows in data["legs"].items():
                tried = [r for r in rows if "no feedback" not in r["variant"]]
                tried = [r for r in tried if "shipped" not in r["variant"]]
                bars.append((f"{label} best\n{leg}", tried[0]))
    bm25 = load("bm25")
    if bm25 is not None:
        best = next(r for r in bm25["rows"] if r["variant"].endswith("hybrid"))
        bars.append(("k1/b best\nopensearch", best))
    if not bars:
        raise SystemExit("run the searches first (search, feedback, scores, bm25)")
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(bars)), 4.5))
    width = 0.27
    for i, (part, colour) in enumerate(
        (("train", "#4c72b0"), ("held_out", "#dd8452"), ("all", "#55a868"))
    ):
        xs = [j + (i - 1) * width for j in range(len(bars))]
        ax.bar(xs, [r[part] for _, r in bars], width, label=part.replace("_", "-"), color=colour)
    ax.axhline(0.745, color="black", linestyle="--", linewidth=1, label="target 0.745")
    ax.set_xticks(range(len(bars)), [n for n, _ in bars], fontsize=7)
    ax.set_ylim(0.69, 0.76)
    ax.set_ylabel("nDCG@10 (SciFact train)")
    ax.set_title("hybrid fusion searches: chosen on the train half, reported on the held-out half")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path = OUT / f"searches_{b}.png"
    fig.savefig(path, dpi=120)
    print(f"written {path}")
    return 0


# ---------------------------------------------------------------- abstention


def _abstain(args: argparse.Namespace) -> int:
    """Every SciFact train claim through the library's abstention rules (``assess``), on
    the replica's final result list (the default fusion, the evidence cap at 1 per
    document as eval_scifact asks, top 100): which answerable claims abstain and why.
    Identifier statistics are per document (title, header and text), by the library's
    matcher (``ident_match``) and, for comparison, by the old raw substring test."""

    from ragline.retrieval.abstain import (
        AbstainPolicy,
        Evidence,
        IdentifierStats,
        assess,
        rule_identifiers,
    )
    from ragline.retrieval.doc_cap import cap_per_document_by_evidence
    from ragline.retrieval.ident_match import matches

    data = _load_legs(args.backend)
    queries: dict[str, str] = data["queries"]
    qrels: dict[str, dict[str, int]] = data["qrels"]
    doc_of: dict[str, str] = data["doc_of"]
    text_of: dict[str, str] = data["text_of"]
    vec = _vectors(args.backend)
    chunks, emb, qemb, qidx, cidx = vec.chunks, vec.emb, vec.qemb, vec.qidx, vec.cidx
    doc_text: dict[str, str] = collections.defaultdict(str)
    for c in chunks:
        doc_text[c["document_id"]] += (
            f" {c['title'] or ''} {c['contextual_header'] or ''} {c['text']}"
        )
    docs = list(doc_text)
    low = {d: t.lower() for d, t in doc_text.items()}
    variant = Variant(fusion="minmax")
    lex_name = args.lexical
    rows = []
    for q, text in queries.items():
        dense = data["dense"][q]
        lex = data[lex_name].get(q, [])
        fused = _fused(variant, dense, lex, text_of, text)
        dr = {c: i + 1 for i, (c, _) in enumerate(dense[: variant.depth])}
        lr = {c: i + 1 for i, (c, _) in enumerate(lex[: variant.depth])}
        ls = dict(lex[: variant.depth])
        keys = [k for k, _ in fused]
        capped = cap_per_document_by_evidence(
            keys,
            lambda k: doc_of[k],
            lambda k, dr=dr, lr=lr: float(
                min([r for r in (dr.get(k), lr.get(k)) if r is not None] or [1e9])
            ),
            1,
        )[:100]
        sims = emb[[cidx[k] for k in capped]] @ qemb[qidx[q]]
        ev = [
            Evidence(
                text=text_of[k],
                similarity=float(s),
                rerank=None,
                bm25_score=ls.get(k),
                dense_rank=dr.get(k),
                bm25_rank=lr.get(k),
            )
            for k, s in zip(capped, sims, strict=True)
        ]
        idents = rule_identifiers([text])
        df_new = {i: sum(1 for d in docs if matches(i, doc_text[d])) for i in idents}
        df_old = {i: sum(1 for d in docs if i in low[d]) for i in idents}
        pol = AbstainPolicy(terms=None)  # the term rules are off above 2,000 chunks
        before = AbstainPolicy(
            terms=None, identifier_missing_min_similarity=0.40, identifier_missing_min_share=0.0
        )
        new = assess(ev, [text], pol, IdentifierStats(documents=len(docs), df=df_new))
        old = assess(ev, [text], before, IdentifierStats(documents=len(docs), df=df_old))
        order = [doc_of[k] for k in capped]
        first = next((i + 1 for i, d in enumerate(order) if d in qrels[q]), None)
        rows.append(
            {
                "case_id": q,
                "query": text,
                "identifiers": sorted(idents),
                "df_old": df_old,
                "df_new": df_new,
                "best_similarity": max((e.similarity or -1.0) for e in ev) if ev else None,
                "dense_top_similarity": dense[0][1] if dense else None,
                "reason_old": old.reason,
                "reason_new": new.reason,
                "first_relevant_rank": first,
                "ndcg@10": ndcg10(order, qrels[q]),
                "hits": [
                    {
                        "dense_score": e.similarity,
                        "bm25_score": e.bm25_score,
                        "dense_rank": e.dense_rank,
                        "bm25_rank": e.bm25_rank,
                        "text": e.text if idents else "",
                    }
                    for e in ev[:20]
                ],
                "ident_documents": len(docs),
                "ident_df": df_new,
            }
        )
    path = OUT / f"abstain_scifact_{args.backend}_{lex_name}.json"
    path.write_text(json.dumps(rows, indent=1))
    for key in ("reason_old", "reason_new"):
        hit = [r for r in rows if r[key] is not None]
        print(f"{key}: {len(hit)} answerable claims abstain")
        for r in hit:
            print(
                f"  {r['case_id']} {r[key]} best={r['best_similarity']:.4f}"
                f" first_relevant={r['first_relevant_rank']} idents={r['df_old']}->{r['df_new']}"
                f" :: {r['query'][:70]}"
            )
    for key in ("reason_old", "reason_new"):
        zeroed = [0.0 if r[key] is not None else r["ndcg@10"] for r in rows]
        print(
            f"hybrid nDCG@10 with {key} abstentions as empty answers: {sum(zeroed) / len(rows):.4f}"
        )
    gone = [r for r in rows if r["df_old"] and all(v == 0 for v in r["df_old"].values())]
    found = [r for r in gone if any(v > 0 for v in r["df_new"].values())]
    print(
        f"claims whose identifiers were all 'in no document': {len(gone)}; found now: {len(found)}"
    )
    print(f"written {path}")
    return 0


def _embed_cached(chunks: list[dict[str, Any]], backend: str) -> tuple[Any, None]:
    import numpy as np

    key = hashlib.sha256(
        "\x00".join(c["chunk_id"] + c["embed_text"] for c in chunks).encode()
    ).hexdigest()[:12]
    return np.load(OUT / f"scifact_emb_{backend}_{key}.npy"), None


@dataclass(frozen=True)
class _Vectors:
    """The replica's chunks with their cached vectors and the queries' vectors."""

    chunks: list[dict[str, Any]]
    emb: Any  # one row per chunk, in ``chunks`` order
    qemb: Any  # one row per query, at ``qidx[query id]``
    qidx: dict[str, int]
    cidx: dict[str, int]  # chunk id -> row of ``emb``


def _vectors(backend: str) -> _Vectors:
    import numpy as np

    chunks = _chunks()
    emb, _ = _embed_cached(chunks, backend)
    qids = json.loads((OUT / "scifact_qids.json").read_text())
    return _Vectors(
        chunks=chunks,
        emb=emb,
        qemb=np.load(OUT / f"scifact_qemb_{backend}.npy"),
        qidx={q: i for i, q in enumerate(qids)},
        cidx={c["chunk_id"]: i for i, c in enumerate(chunks)},
    )


def _load_legs(backend: str) -> dict[str, Any]:
    """What ``legs`` wrote: queries, qrels, chunk -> document / text, the legs' lists."""
    data: dict[str, Any] = json.loads((OUT / f"legs_{backend}.json").read_text())
    return data


def main(argv: list[str]) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("legs", help="chunks, embeddings and the three legs' top 100")
    lg.add_argument("--backend", default="onnx-int8", choices=("torch", "onnx", "onnx-int8"))
    s = sub.add_parser("search", help="fusion variants, chosen on train, held-out report")
    s.add_argument("--backend", default="onnx-int8")
    s.add_argument("--lexical", default="opensearch")
    f = sub.add_parser("feedback", help="dense pseudo-relevance feedback variants")
    f.add_argument("--backend", default="onnx-int8")
    f.add_argument("--lexical", default="opensearch")
    f.add_argument("--depth", type=int, default=50)
    sc = sub.add_parser("scores", help="missing scores filled in, one-leg penalty, z origin")
    sc.add_argument("--backend", default="onnx-int8")
    sc.add_argument("--lexical", default="opensearch")
    bm = sub.add_parser("bm25", help="BM25 k1 / b grid, alone and fused")
    bm.add_argument("--backend", default="onnx-int8")
    pl = sub.add_parser("plot", help="every search's best against the shipped fusion")
    pl.add_argument("--backend", default="onnx-int8")
    a = sub.add_parser("abstain", help="SciFact claims through the abstention rules")
    a.add_argument("--backend", default="onnx-int8")
    a.add_argument("--lexical", default="opensearch")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    run = {
        "legs": _legs,
        "search": _search,
        "feedback": _feedback,
        "scores": _scores,
        "bm25": _bm25,
        "plot": _plot,
        "abstain": _abstain,
    }[args.cmd]
    rc = run(args)
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
