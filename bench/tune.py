"""Retrieval tuning on the real engines, every step recorded (a table on stdout + JSON
under bench/out/tune/). Lexical runs on a real OpenSearch 2.19.6 node (bench/_opensearch.py:
the stack's Maven-fetched jars, a throw-away directory); dense by the library's embedder;
fusion by the library's own code (``candidates.fuse`` + ``exact_refuse``). Every fit
chooses on the fixed training half of the queries (``_tune.in_train``: sha256 of the id)
and reports the held-out half.

SciFact train (809 claims, 11,896 child chunks as the pipeline's chunker + enricher
make them):

    tune.py legs [--backend onnx-int8]
        both legs' top 200 per claim, cached: dense (exact cosine over the chunks as the
        embedder embeds them) and lexical (the production mapping and query on the real
        node) -> legs_<backend>.json (embedding 11,896 chunks costs CPU: run it niced)
    tune.py fusion [--backend onnx-int8] [--shipped-only]
        fusion variants over the cached legs (normalisation, leg weights, depth, RRF k,
        document aggregation, evidence weighting, the exact-identifier boost), each
        through the library's fusion -> fusion_<backend>.json
    tune.py bm25 [--grid k1:b,...]
        BM25 k1 / b (one index per pair: ``similarity`` is static), the lexical leg alone
        and fused with the shipped fusion -> bm25_<backend>.json
    tune.py lexical [--reference]
        the lexical leg step by step: fields, boosts, chunk vs document level, k1 / b;
        ``--reference`` adds bm25s (Lucene's formula, needs the ``eval`` extra)
        -> lexical.json
    tune.py terms [--report bench/out/scifact/report.json]
        every claim's term statistics read as the service reads them (the pipeline's
        chunks in a tenant index of the real node, ``LexicalSearcher.term_stats``), then
        ``TermPolicy`` fitted on the golden half (``collect``) subject to "no SciFact
        claim abstains" -> terms_scifact.json, terms_fit.json
    tune.py abstain [--backend onnx-int8]
        every claim's final list (the defaults) through the library's abstention rules
        -> abstain_scifact_<backend>.json (for ``idents``)

Golden sets (abstention), over one kept private stack:

    tune.py serve [--golden-only]     start + ingest once, keep it up until interrupted
    tune.py collect                   hybrid top 100 of every golden case, rules off,
                                      with its term / identifier statistics
    tune.py idents --scifact abstain_scifact_<backend>.json
                                      the identifier rule's bar and share
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import itertools
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import _tune
from _paths import SCIFACT
from _tune import (
    DEPTH,
    EVAL_DEPTH,
    GOLDEN_SETS,
    GROUP,
    OUT,
    QUERY_ENV,
    TENANT,
    doc_order,
    in_train,
    ndcg10,
    print_rows,
    summary,
    write,
)

# ---------------------------------------------------------------- the real node


@functools.cache
def _node() -> Any:
    """One real OpenSearch node per process (a k1 / b grid indexes once per pair), closed
    by ``main`` (an ``atexit`` hook would run after the interpreter stopped taking
    threads, and the node's stop needs one)."""
    from _opensearch import OpenSearchNode

    return OpenSearchNode.start()


def _index(url: str, index: str, mapping: dict[str, Any], docs: list[dict[str, Any]]) -> None:
    """A fresh raw index (not a tenant alias: the grid needs its own mapping) of ``docs``."""
    import httpx

    httpx.delete(f"{url}/{index}", timeout=120)
    httpx.put(f"{url}/{index}", json=mapping, timeout=120).raise_for_status()
    for i in range(0, len(docs), 2000):
        lines: list[str] = []
        for d in docs[i : i + 2000]:
            lines.append(json.dumps({"index": {"_index": index, "_id": d["chunk_id"]}}))
            lines.append(json.dumps(d))
        r = httpx.post(
            f"{url}/_bulk",
            content="\n".join(lines) + "\n",
            headers={"content-type": "application/x-ndjson"},
            timeout=600,
        )
        if r.json().get("errors"):
            raise RuntimeError(f"bulk errors: {r.text[:300]}")
    httpx.post(f"{url}/{index}/_refresh", timeout=600).raise_for_status()


def _run(
    url: str, index: str, queries: dict[str, str], body: Callable[[str], dict[str, Any]]
) -> dict[str, list[list[Any]]]:
    """Per query the hits of ``body(text)`` as [chunk id, score] (the chunk id from its
    doc value, as ``LexicalSearcher`` reads it, else ``_id``)."""
    import httpx

    out: dict[str, list[list[Any]]] = {}
    with httpx.Client(timeout=120) as client:
        for q, text in queries.items():
            resp = client.post(f"{url}/{index}/_search", json=body(text))
            resp.raise_for_status()
            out[q] = [
                [((h.get("fields") or {}).get("chunk_id") or [h["_id"]])[0], float(h["_score"])]
                for h in resp.json()["hits"]["hits"]
            ]
    return out


def _production(limit: int = DEPTH) -> Callable[[str], dict[str, Any]]:
    """The lexical leg's request body (``lexical.build_query``) for the tuner's caller."""
    from ragline.auth.principal import Principal
    from ragline.retrieval.filters import compile_predicates
    from ragline.retrieval.lexical import build_query

    who = Principal(tenant=TENANT, groups=(GROUP,), subject="tune")
    preds = compile_predicates(None, include_superseded=False, effective_at=None)
    return lambda text: build_query(who, text, preds, limit=limit)


def _lexical_leg(
    chunks: list[dict[str, Any]], queries: dict[str, str], k1: float | None, b: float | None
) -> dict[str, list[list[Any]]]:
    """The production query over ``chunks`` in an index with the production mapping
    (``body``'s k1 / b replaced when given); cached per pair."""
    from _opensearch import mapping

    sim = next(iter(mapping()["settings"]["similarity"].values()))
    k1 = float(sim["k1"]) if k1 is None else k1
    b = float(sim["b"]) if b is None else b
    cache = _tune.lexical_path(k1, b)
    if cache.is_file():
        cached: dict[str, Any] = json.loads(cache.read_text())
        if cached["chunks"] == len(chunks) and set(cached["hits"]) == set(queries):
            return dict(cached["hits"])
    url = _node().url
    name = f"tune-k{k1}-b{b}".replace(".", "_")
    _index(url, name, mapping(k1, b), _tune.lexical_docs(chunks))
    hits = _run(url, name, queries, _production())
    import httpx

    httpx.delete(f"{url}/{name}", timeout=120)
    write(cache.name, {"k1": k1, "b": b, "chunks": len(chunks), "hits": hits})
    return hits


# ---------------------------------------------------------------- legs


def _legs(args: argparse.Namespace) -> int:
    import numpy as np

    _, queries, qrels = _tune.scifact()
    chunks = _tune.chunks()
    print(f"{len(chunks)} chunks, {len(queries)} queries", flush=True)
    qids = list(queries)
    t0 = time.perf_counter()
    lexical = _lexical_leg(chunks, queries, None, None)
    print(f"lexical leg on the real node: {time.perf_counter() - t0:.0f} s", flush=True)
    emb, qemb = _tune.embeddings(chunks, [queries[q] for q in qids], args.backend)
    sims = qemb @ emb.T
    dense = {}
    for i, q in enumerate(qids):
        top = np.argsort(-sims[i])[:DEPTH]
        dense[q] = [[chunks[j]["chunk_id"], float(sims[i][j])] for j in top]
    data = {
        "backend": args.backend,
        "chunks": len(chunks),
        "queries": queries,
        "qrels": qrels,
        "doc_of": {c["chunk_id"]: c["document_id"] for c in chunks},
        "text_of": {c["chunk_id"]: c["text"] for c in chunks},
        "dense": dense,
        "lexical": lexical,
    }
    path = _tune.legs_path(args.backend)
    path.write_text(json.dumps(data))
    per = {
        name: {q: ndcg10([data["doc_of"][c] for c, _ in leg[q]], qrels[q]) for q in qids}
        for name, leg in (("dense alone", dense), ("lexical alone", lexical))
    }
    print_rows("the legs alone (nDCG@10, document level)", summary(per, qids))
    print(f"written {path}")
    return 0


# ---------------------------------------------------------------- fusion


@dataclass(frozen=True)
class Variant:
    """One fusion setting: the ``RankingSettings`` fields it changes, the depth each leg
    is cut to (the service reads ``max(overfetch, top_k)``: 100 in ``eval_scifact``), and
    the document aggregation (0: a document ranks where its first chunk does, as the
    service's per-document cap does; > 0 is not a library knob, measured only), and the
    unit fused (``by_document``: each leg's list collapsed to its documents, a document
    scored by its best chunk in that leg, then fused; not a library knob either: the
    service fuses chunks)."""

    ranking: tuple[tuple[str, Any], ...] = ()
    depth: int = EVAL_DEPTH
    doc_sum: float = 0.0
    by_document: bool = False

    @property
    def name(self) -> str:
        knobs = " ".join(f"{k}={v}" for k, v in self.ranking) or "defaults"
        agg = "" if self.doc_sum == 0 else f" doc=max+{self.doc_sum}*sum"
        unit = " fused-by-document" if self.by_document else ""
        return f"{knobs} depth={self.depth}{agg}{unit}"

    @property
    def in_library(self) -> bool:
        return self.doc_sum == 0 and not self.by_document


class _Row:
    """What ``exact_refuse`` reads of a hydrated chunk."""

    def __init__(self, text: str) -> None:
        self.text = text


@functools.cache
def _settings(ranking: tuple[tuple[str, Any], ...]) -> Any:
    from ragline.retrieval.settings import RankingSettings

    return RankingSettings(**dict(ranking))


@functools.cache
def _identifiers(query: str) -> frozenset[str]:
    from ragline.retrieval.abstain import identifiers

    return frozenset(identifiers(query))


def fused(
    v: Variant,
    dense: Sequence[Sequence[Any]],
    lex: Sequence[Sequence[Any]],
    text_of: dict[str, str],
    query: str,
    chunks: int,
    doc_of: dict[str, str] | None = None,
) -> list[tuple[str, float]]:
    """The chunk order the query service makes for this variant (``candidates.fuse``, then
    the exact-identifier boost ``exact_refuse`` for a query naming an identifier); for a
    ``by_document`` variant the document order (``doc_of`` needed, ``text_of`` then also
    maps a document to its text)."""
    from ragline.retrieval.candidates import exact_refuse, fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.lexical import LexicalHit

    settings = _settings(v.ranking)
    if v.by_document:
        assert doc_of is not None
        dense, lex = (_best_per_document(leg[: v.depth], doc_of) for leg in (dense, lex))
    dh = [
        DenseHit(chunk_id=c, similarity=s, rank=i + 1) for i, (c, s) in enumerate(dense[: v.depth])
    ]
    lh = [LexicalHit(chunk_id=c, score=s, rank=i + 1) for i, (c, s) in enumerate(lex[: v.depth])]
    out = fuse(dh, lh, settings, chunks=chunks)
    idents = _identifiers(query)
    if idents:
        rows = {f.key: _Row(text_of.get(f.key, "")) for f in out}
        out = exact_refuse(out, rows, set(idents), settings)  # type: ignore[arg-type]
    return [(f.key, f.score) for f in out]


def _best_per_document(leg: Sequence[Sequence[Any]], doc_of: dict[str, str]) -> list[list[Any]]:
    """A leg's chunk list (best first) as its documents, each at its best chunk's score."""
    out: dict[str, float] = {}
    for c, s in leg:
        out.setdefault(doc_of[c], s)
    return [[d, s] for d, s in out.items()]


SHIPPED = Variant()  # RankingSettings() as the service runs it for eval_scifact (top_k 100)


def _variants() -> list[Variant]:
    out = [SHIPPED]
    for norm, wd, depth, ds in itertools.product(
        ("zscore", "minmax"), (0.5, 0.75, 1.0, 1.25, 1.5, 2.0), (20, 50, 100, 200), (0.0, 0.1)
    ):
        out.append(
            Variant(
                ranking=(("fusion", "score"), ("score_norm", norm), ("weight_dense", wd)),
                depth=depth,
                doc_sum=ds,
            )
        )
    for k, wd, depth in itertools.product((10, 20, 60, 100), (1.0, 1.5), (50, 100, 200)):
        out.append(
            Variant(ranking=(("fusion", "rrf"), ("rrf_k", k), ("weight_dense", wd)), depth=depth)
        )
    for none, ramp in ((0.4, 0.4), (0.6, 0.6), (0.8, 0.8), (1.2, 0.8)):
        evidence = (("lexical_evidence_none", none), ("lexical_evidence_ramp", ramp))
        out += [Variant(ranking=evidence, depth=depth) for depth in (50, 100)]
    for we in (0.0, 0.5, 2.0):
        out.append(Variant(ranking=(("weight_exact", we),)))
    for norm, wd, depth in itertools.product(
        ("zscore", "minmax"), (0.75, 1.0, 1.25), (50, 100, 200)
    ):
        ranking = (("fusion", "score"), ("score_norm", norm), ("weight_dense", wd))
        out.append(Variant(ranking=ranking, depth=depth, by_document=True))
    for k, depth in itertools.product((20, 60), (100, 200)):
        ranking = (("fusion", "rrf"), ("rrf_k", k))
        out.append(Variant(ranking=ranking, depth=depth, by_document=True))
    return list(dict.fromkeys(out))


def _fusion(args: argparse.Namespace) -> int:
    data = _tune.load_legs(args.backend)
    queries: dict[str, str] = data["queries"]
    qrels: dict[str, dict[str, int]] = data["qrels"]
    doc_of: dict[str, str] = data["doc_of"]
    text_of: dict[str, str] = data["text_of"]
    qids = list(queries)
    variants = [SHIPPED] if args.shipped_only else _variants()
    texts = dict(text_of)  # a document's text too (the by-document variants' exact boost)
    for c, d in doc_of.items():
        texts[d] = f"{texts.get(d, '')} {text_of[c]}"
    t0 = time.perf_counter()
    per: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for n, q in enumerate(qids):
        for v in variants:
            dl, ll = data["dense"][q], data["lexical"][q]
            order = fused(v, dl, ll, texts, queries[q], data["chunks"], doc_of)
            docs = [k for k, _ in order] if v.by_document else doc_order(order, doc_of, v.doc_sum)
            per[v.name][q] = ndcg10(docs, qrels[q])
        if n % 200 == 0:
            print(f"{n}/{len(qids)} queries ({time.perf_counter() - t0:.0f} s)", flush=True)
    legs = {
        f"{name} alone": {q: ndcg10([doc_of[c] for c, _ in data[name][q]], qrels[q]) for q in qids}
        for name in ("dense", "lexical")
    }
    rows = summary(per, qids)
    shipped = next(r for r in rows if r["variant"] == SHIPPED.name)
    knobs = {v.name for v in variants if v.in_library}
    library = [r for r in rows if r["variant"] in knobs]  # only in-library knobs
    chosen = library[0]
    print_rows("the legs alone", summary(legs, qids))
    print_rows(
        f"fusion, {len(variants)} variants, best on the train half first (top 15; "
        f"{time.perf_counter() - t0:.0f} s)",
        [shipped, *rows[:15]],
    )
    print(
        f"\nshipped: {shipped['train']:.4f} / {shipped['held_out']:.4f} / {shipped['all']:.4f}"
        f"\nchosen (library knobs, best on the train half): {chosen['variant']}: "
        f"{chosen['train']:.4f} / {chosen['held_out']:.4f} / {chosen['all']:.4f}"
        f" ({'beats' if chosen['held_out'] > shipped['held_out'] else 'does not beat'}"
        " the shipped fusion on the held-out half)"
    )
    path = write(
        f"fusion_{args.backend}.json",
        {
            "backend": data["backend"],
            "chunks": data["chunks"],
            "legs": summary(legs, qids),
            "shipped": shipped,
            "chosen": chosen,
            "every": rows,
        },
    )
    print(f"written {path}")
    return 0


# ---------------------------------------------------------------- bm25


def _grid(spec: str) -> list[tuple[float, float]]:
    """``"k1:b,k1:b"`` -> pairs."""
    pairs = [p.split(":") for p in spec.split(",") if p.strip()]
    return [(float(k1), float(b)) for k1, b in pairs]


def _bm25(args: argparse.Namespace) -> int:
    """BM25 k1 / b: the lexical leg alone and fused with the shipped fusion, per pair."""
    data = _tune.load_legs(args.backend)
    queries: dict[str, str] = data["queries"]
    qrels: dict[str, dict[str, int]] = data["qrels"]
    doc_of: dict[str, str] = data["doc_of"]
    chunks = _tune.chunks()
    qids = list(queries)
    per: dict[str, dict[str, float]] = collections.defaultdict(dict)
    t0 = time.perf_counter()
    for k1, b in _grid(args.grid):
        lex = _lexical_leg(chunks, queries, k1, b)
        for q in qids:
            per[f"k1 {k1} b {b}: lexical alone"][q] = ndcg10(
                [doc_of[c] for c, _ in lex[q]], qrels[q]
            )
            order = fused(
                SHIPPED, data["dense"][q], lex[q], data["text_of"], queries[q], len(chunks)
            )
            per[f"k1 {k1} b {b}: hybrid"][q] = ndcg10(doc_order(order, doc_of), qrels[q])
        print(f"k1 {k1} b {b} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    rows = summary(per, qids)
    print_rows("BM25 k1 / b on the real node (lexical alone, and fused as shipped)", rows)
    path = write(f"bm25_{args.backend}.json", {"backend": data["backend"], "rows": rows})
    print(f"written {path}")
    return 0


# ---------------------------------------------------------------- lexical, step by step


def _bm25s(
    texts: list[str], keys: list[str], queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> float:
    """Mean nDCG@10 of the reference BM25 (bm25s, Lucene's formula, k1 1.2, b 0.75,
    Snowball English stemmer and stop words) over ``texts``."""
    import bm25s
    import Stemmer

    stem = Stemmer.Stemmer("english")
    qids = list(queries)
    tok = bm25s.tokenize(texts, stopwords="en", stemmer=stem, show_progress=False)
    model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    model.index(tok, show_progress=False)
    qtok = bm25s.tokenize(
        [queries[q] for q in qids], stopwords="en", stemmer=stem, show_progress=False
    )
    res, _ = model.retrieve(qtok, k=min(300, len(texts)), show_progress=False)
    return sum(ndcg10([keys[j] for j in res[i]], qrels[q]) for i, q in enumerate(qids)) / len(qids)


def _lexical(args: argparse.Namespace) -> int:
    from _opensearch import mapping

    from ragline.store.os_index import chunk_mapping

    corpus, queries, qrels = _tune.scifact()
    if args.limit:
        queries = dict(list(queries.items())[: args.limit])
    rows: list[dict[str, Any]] = []

    def step(name: str, value: float, why: str) -> None:
        rows.append({"step": name, "ndcg@10": value, "isolates": why})
        print(f"{name}: {value:.4f}", flush=True)

    def mean(hits: dict[str, list[list[Any]]], doc: Callable[[str], str]) -> float:
        return sum(ndcg10([doc(c) for c, _ in hits[q]], qrels[q]) for q in queries) / len(queries)

    doc_keys = [f"scifact:{c['_id']}" for c in corpus]
    doc_texts = [f"{c['title']} {c['text']}" for c in corpus]
    chunks = _tune.chunks()
    doc_of = {c["chunk_id"]: c["document_id"] for c in chunks}
    if args.reference:
        step(
            "reference: bm25s, document = title + text",
            _bm25s(doc_texts, doc_keys, queries, qrels),
            "the target",
        )
        step(
            "bm25s over our chunks, header + text",
            _bm25s(
                [f"{c['contextual_header'] or ''} {c['text']}" for c in chunks],
                [c["document_id"] for c in chunks],
                queries,
                qrels,
            ),
            "chunk vs document statistics, reference BM25",
        )
    url = _node().url
    # one entry per abstract, as the reference indexes them
    whole = _tune.lexical_docs(
        [
            {"chunk_id": k, "document_id": k, "text": t, "contextual_header": None}
            for k, t in zip(doc_keys, doc_texts, strict=True)
        ]
    )
    prod = _production()
    _index(url, "tune-docs", chunk_mapping(), whole)
    step(
        "documents, title + text, match on text (Lucene's default k1 1.2, b 0.75)",
        mean(
            _run(
                url,
                "tune-docs",
                queries,
                lambda t: {"size": DEPTH, "query": {"match": {"text": t}}},
            ),
            str,
        ),
        "the real engine on the reference's own documents",
    )
    step(
        "documents, title + text, production query and k1 / b",
        mean(_run(url, "tune-docs", queries, prod), str),
        "chunk vs document level, everything else equal (with the next row)",
    )
    _index(url, "tune-chunks", chunk_mapping(), _tune.lexical_docs(chunks))
    for name, fields, kind, why in (
        ("chunks, text only", ["text"], "best_fields", "what the header's words add"),
        (
            "chunks, best_fields text + header^0.5",
            ["text", "contextual_header^0.5"],
            "best_fields",
            "before mapping v2: the best single field counts",
        ),
        (
            "chunks, most_fields text + header^0.5",
            ["text", "contextual_header^0.5"],
            "most_fields",
            "fields summed instead of the best one",
        ),
    ):
        body = {"multi_match": {"fields": fields, "type": kind}}
        step(
            name,
            mean(
                _run(
                    url,
                    "tune-chunks",
                    queries,
                    lambda t, body=body: {
                        "size": DEPTH,
                        "query": {"multi_match": {**body["multi_match"], "query": t}},
                    },
                ),
                doc_of.__getitem__,
            ),
            why,
        )
    step(
        "chunks, production query (body = header + text) and mapping",
        mean(_run(url, "tune-chunks", queries, prod), doc_of.__getitem__),
        "what ships",
    )
    for k1, b in _grid(args.grid):
        name = f"tune-k{k1}-b{b}".replace(".", "_")
        _index(url, name, mapping(k1, b), _tune.lexical_docs(chunks))
        step(
            f"chunks, production query, body k1 {k1} b {b}",
            mean(_run(url, name, queries, prod), doc_of.__getitem__),
            "k1 / b (static per field: one index per pair)",
        )
    print("\n| step | nDCG@10 (SciFact train, document level) | what it isolates |\n|---|---|---|")
    for r in rows:
        print(f"| {r['step']} | {r['ndcg@10']:.4f} | {r['isolates']} |")
    print(f"written {write('lexical.json', rows)}")
    return 0


# ---------------------------------------------------------------- golden sets: serve, collect


async def _serve(args: argparse.Namespace) -> int:
    from ragline.evaluation.datasets import load_beir
    from ragline.evaluation.golden import load_golden
    from ragline.evaluation.ingest import ingest_dataset
    from ragline.platform.private import private_platform

    datasets = [load_golden(p) for p in GOLDEN_SETS if (p / "manifest.yaml").is_file()]
    if not args.golden_only:
        datasets.append(load_beir(SCIFACT, split="train", tenant=TENANT, groups=(GROUP,)))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with private_platform(query_env=QUERY_ENV, keep_dir=True) as plat:

        async def ingest_all() -> None:
            for ds in datasets:
                res = await ingest_dataset(
                    ds, plat.settings, timeout_s=7200, poll_interval_s=2.0, progress=False
                )
                print(f"ingested {ds.name}: {res.as_dict()}", flush=True)
            state = {
                "env": {k: v for k, v in os.environ.items() if k.startswith("RAGLINE_")},
                "query_url": plat.query_url,
                "log_dir": str(plat.log_dir),
                "pid": os.getpid(),
            }
            print(f"stack ready: {write('stack.json', state)}", flush=True)
            await stop.wait()

        # a signal stops it at any point, mid-ingest too (the platform then shuts down)
        work = asyncio.create_task(ingest_all())
        halt = asyncio.create_task(stop.wait())
        await asyncio.wait({work, halt}, return_when=asyncio.FIRST_COMPLETED)
        for t in (work, halt):
            t.cancel()
        if work.done() and not work.cancelled() and work.exception() is not None:
            raise work.exception()  # type: ignore[misc]
    return 0


def _stack_env() -> dict[str, str]:
    path = OUT / "stack.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `bench/tune.py serve --golden-only` first")
    env: dict[str, str] = json.loads(path.read_text())["env"]
    return env


async def _collect(args: argparse.Namespace) -> int:
    """Over the kept stack: a query service with every abstention rule off, hybrid top
    100 of every golden case, and the case's term / identifier statistics under its
    principal -> terms_golden.json."""
    os.environ.update(_stack_env())
    from pydantic import SecretStr

    from ragline.auth.principal import Principal
    from ragline.config import Settings
    from ragline.evaluation.client import QueryClient
    from ragline.evaluation.evaluate import wait_ready
    from ragline.evaluation.golden import load_golden
    from ragline.evaluation.settings import EvalSettings
    from ragline.platform.stack.testing import ServiceProcess, free_port
    from ragline.retrieval.abstain import rule_identifiers
    from ragline.retrieval.filters import compile_predicates
    from ragline.retrieval.lexical import LexicalSearcher
    from ragline.retrieval.specificity import IdentifierFrequency
    from ragline.retrieval.term_stats import QueryTermFrequency
    from ragline.store.os_client import make_client

    env = {
        **os.environ,
        **QUERY_ENV,
        "RAGLINE_QUERY_ABSTAIN_MODEL": "similarity",
        "RAGLINE_QUERY_ABSTAIN_MIN_SIMILARITY": "-1",
        "RAGLINE_QUERY_ABSTAIN_TERMS": "false",
        # the identifier rule off too: every case's results come back (``idents`` replays it)
        "RAGLINE_QUERY_ABSTAIN_IDENTIFIER_MISSING_MIN_SIMILARITY": "-1",
    }
    proc = ServiceProcess(
        "query",
        env=env,
        log_path=OUT / "terms-query.log",
        metrics_port=free_port(),
        http_port=free_port(),
    )
    rows: list[dict[str, Any]] = []
    try:
        es = EvalSettings(
            query_url=proc.http_url,
            jwt_secret=SecretStr(os.environ["RAGLINE_QUERY_JWT_SECRET"]),
            concurrency=2,
        )
        settings = Settings()
        os_client = make_client(settings)
        lexical = LexicalSearcher(os_client, index_prefix=settings.opensearch_index_prefix)
        terms = QueryTermFrequency(lexical, timeout_s=30.0)
        preds = compile_predicates(None, include_superseded=False, effective_at=None)
        ident_df = IdentifierFrequency(lexical, timeout_ms=30_000)
        async with QueryClient(es) as client:
            await wait_ready(client, timeout_s=300)
            for path in GOLDEN_SETS:
                for case in load_golden(path).cases:
                    resp, _ = await client.search(
                        case.principal,
                        case.question,
                        mode="hybrid",
                        rerank=False,
                        top_k=100,
                        filters=dict(case.filters),
                        extra=dict(case.request),
                    )
                    hits = [
                        h.scores.model_dump() | {"text": h.text, "chunk_id": h.chunk_id}
                        for h in resp.results
                    ]
                    lex = [h for h in hits if h["bm25_rank"] is not None]
                    top = min(lex, key=lambda h: h["bm25_rank"])["chunk_id"] if lex else None
                    p = Principal(
                        tenant=case.principal.tenant,
                        groups=tuple(case.principal.groups),
                        subject="tune",
                    )
                    ts = await terms.get(p, case.question, preds, top) if hits else None
                    idents = rule_identifiers([case.question])
                    ist = await ident_df.get(p, idents) if idents and hits else None
                    keep = ("dense_score", "dense_rank", "bm25_rank", "bm25_score", "text")
                    rows.append(
                        {
                            "dataset": path.name,
                            "case_id": case.case_id,
                            "category": case.category,
                            "expect_abstain": case.expect_abstain,
                            "abstained": resp.abstained,  # by a rule before similarity
                            "signal": resp.evidence.signal if resp.evidence else None,
                            "question": case.question,
                            "hits": [{k: h[k] for k in keep} for h in hits],
                            "ident_documents": ist.documents if ist else None,
                            "ident_df": dict(ist.df) if ist else None,
                            "chunks": ts.chunks if ts else None,
                            "df": dict(ts.df) if ts else None,
                            "top": sorted(ts.top) if ts else None,
                        }
                    )
        await os_client.close()
    finally:
        proc.cleanup()
    print(f"written {write('terms_golden.json', rows)} ({len(rows)} cases)")
    return 0


# ---------------------------------------------------------------- terms


async def _term_stats(
    chunks: list[dict[str, Any]], queries: dict[str, str], tops: dict[str, str | None]
) -> dict[str, Any]:
    """Every claim's term statistics as the service reads them: the pipeline's chunks in
    a tenant index (``ensure_index``: the production mapping and alias) of the real node,
    each claim through ``LexicalSearcher.term_stats`` under the tenant's scope filter, with
    the words its lexical leg's top chunk (``tops``) holds."""
    from ragline.auth.principal import Principal
    from ragline.config import Settings
    from ragline.retrieval.filters import compile_predicates
    from ragline.retrieval.lexical import LexicalSearcher
    from ragline.store.os_bulk import bulk_index
    from ragline.store.os_client import make_client
    from ragline.store.os_index import ensure_index, index_name

    node = await asyncio.to_thread(_node)
    settings = Settings(opensearch_url=node.url)
    client = make_client(settings)
    out: dict[str, Any] = {}
    try:
        prefix = settings.opensearch_index_prefix
        index = index_name(prefix, TENANT)
        await ensure_index(client, index)
        docs = [(d["chunk_id"], d) for d in _tune.lexical_docs(chunks)]
        await bulk_index(client, index, docs, refresh="true")
        lexical = LexicalSearcher(client, index_prefix=prefix)
        who = Principal(tenant=TENANT, groups=(GROUP,), subject="tune")
        preds = compile_predicates(None, include_superseded=False, effective_at=None)
        for q, text in queries.items():
            top = tops.get(q)
            ts = await lexical.term_stats(who, text, preds, top_chunk_id=top, timeout_s=30)
            out[q] = {"chunks": ts.chunks, "df": dict(ts.df), "top": sorted(ts.top)} if ts else None
    finally:
        await client.close()
    return out


class _Hit:
    def __init__(self, h: dict[str, Any]) -> None:
        self.similarity = h.get("dense_score")
        self.dense_rank = h.get("dense_rank")
        self.bm25_rank = h.get("bm25_rank")


def _decide(row: dict[str, Any], thr: float, policy: Any) -> bool:
    """Would the search abstain (similarity threshold + term rules)?"""
    from ragline.retrieval.term_evidence import TermStats, decide_by_terms

    if row.get("signal") in ("identifier", "no_results"):
        return bool(row.get("abstained"))  # decided before similarity, unchanged
    hits = [_Hit(h) for h in row.get("hits", [])]
    sims = [h.similarity for h in hits if h.similarity is not None]
    best = max(sims) if sims else row.get("best_similarity")
    if best is None:
        return True
    if row.get("df") is not None:
        ts = TermStats(chunks=row["chunks"], df=row["df"], top=frozenset(row.get("top") or ()))
        d = decide_by_terms(hits, best, thr, ts, policy)
        if d is not None:
            return d[0] == "abstain"
    return bool(best < thr)


def _pr(rows: list[dict[str, Any]], abstains: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Abstention precision / recall over ``rows`` (cases without an expectation skipped),
    with the case ids of both kinds of error."""
    tp = fp = fn = 0
    wrong: list[str] = []
    missed: list[str] = []
    for r in rows:
        if r["expect_abstain"] is None:
            continue
        a = abstains(r)
        if a and r["expect_abstain"]:
            tp += 1
        elif a:
            fp += 1
            wrong.append(r["case_id"])
        elif r["expect_abstain"]:
            fn += 1
            missed.append(r["case_id"])
    return {
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "abstained_answerable": wrong,
        "answered_unanswerable": missed,
    }


def _f1(res: dict[str, Any]) -> float:
    p, r = res["precision"] or 0.0, res["recall"] or 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


def _terms(args: argparse.Namespace) -> int:
    """``TermPolicy`` on the real node's statistics: the answer-direction parameters
    (band, coverage, clear-match gap) where the train half's F1 moves over them, then the
    abstain-direction ones (share of missing words, the similarity that answers despite
    them): best train-half F1 that abstains on no SciFact claim."""
    from ragline.retrieval.term_evidence import TermPolicy

    _, queries, _ = _tune.scifact()
    t0 = time.perf_counter()
    sims: dict[str, float | None] = {}
    tops: dict[str, str | None] = {}
    if _tune.legs_path(args.backend).is_file():  # the dense leg's top cosine, BM25's top chunk
        legs = _tune.load_legs(args.backend)
        sims = {q: (h[0][1] if h else None) for q, h in legs["dense"].items()}
        tops = {q: (h[0][0] if h else None) for q, h in legs["lexical"].items()}
    stats = asyncio.run(_term_stats(_tune.chunks(), queries, tops))
    if args.report:  # each claim's best hybrid similarity, from an eval_scifact report
        report = json.loads(Path(args.report).read_text())
        sims = {
            c["case_id"]: c["best_similarity"] for c in report["cases"] if c["mode"] == "hybrid"
        }
    scifact = [
        {
            "dataset": "beir:scifact",
            "case_id": q,
            "expect_abstain": False,
            "best_similarity": sims.get(q),
        }
        | (s or {"chunks": 0, "df": {}})
        for q, s in stats.items()
    ]
    print(
        f"term statistics of {len(scifact)} claims ({time.perf_counter() - t0:.0f} s)", flush=True
    )
    write("terms_scifact.json", scifact)
    golden_path = OUT / "terms_golden.json"
    if not golden_path.is_file():
        print(f"{golden_path} is missing (`serve --golden-only`, then `collect`): no fit")
        return 0
    golden = json.loads(golden_path.read_text())
    train = [r for r in golden if in_train(r["case_id"])]
    held = [r for r in golden if not in_train(r["case_id"])]
    thr = args.threshold
    defaults = TermPolicy()
    off = TermPolicy(band=0.0, min_top_coverage=2.0, clear_match_gap=2.0, max_missing_share=2.0)

    def pr(rows: list[dict[str, Any]], pol: Any) -> dict[str, Any]:
        return _pr(rows, lambda r: _decide(r, thr, pol))

    def newly_abstained(pol: Any) -> list[str]:
        return [
            r["case_id"]
            for r in scifact
            if r.get("best_similarity") is not None
            and _decide(r, thr, pol)
            and not _decide(r, thr, off)
        ]

    answer_f1 = {
        combo: _f1(
            pr(
                train,
                replace(
                    defaults, band=combo[0], min_top_coverage=combo[1], clear_match_gap=combo[2]
                ),
            )
        )
        for combo in itertools.product((0.03, 0.04, 0.05), (0.4, 0.5, 0.6, 0.7), (0.05, 0.1, 0.15))
    }
    flat = max(answer_f1.values()) - min(answer_f1.values()) < 1e-9
    base = defaults
    if not flat:  # nothing on train to fit them on when flat: the defaults stand
        c = max(answer_f1, key=lambda c: (answer_f1[c], -c[0], c[1], c[2]))
        base = replace(defaults, band=c[0], min_top_coverage=c[1], clear_match_gap=c[2])
    scored: list[tuple[tuple[float, float, float], Any, dict[str, Any]]] = []
    for miss, bar in itertools.product(
        (0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 1.01), (0.35, 0.375, 0.4, 0.425, 0.45)
    ):
        pol = replace(base, max_missing_share=miss, missing_min_similarity=bar)
        if newly_abstained(pol):
            continue
        tr = pr(train, pol)
        scored.append(((_f1(tr), miss, -bar), pol, tr))  # ties: abstain least
    scored.sort(key=lambda x: x[0], reverse=True)
    _, best, tr = scored[0]
    out = {
        "threshold": thr,
        "chosen": best.__dict__,
        "defaults": defaults.__dict__,
        "answer_params_identifiable_on_train": not flat,
        "train_f1_by_share_and_bar": {f"{k[1]}/{-k[2]}": round(k[0], 4) for k, _, _ in scored},
        "train": {"off": pr(train, off), "defaults": pr(train, defaults), "chosen": tr},
        "held_out": {
            "off": pr(held, off),
            "defaults": pr(held, defaults),
            "chosen": pr(held, best),
        },
        "scifact_train": {
            "claims": len(scifact),
            "with_similarity": sum(1 for r in scifact if r.get("best_similarity") is not None),
            "abstained_by_terms": {
                "defaults": newly_abstained(defaults),
                "chosen": newly_abstained(best),
            },
        },
    }
    print(json.dumps(out, indent=1))
    print(f"written {write('terms_fit.json', out)}")
    return 0


# ---------------------------------------------------------------- identifier rule


def _abstain(args: argparse.Namespace) -> int:
    """Every SciFact train claim through the library's abstention rules (``assess``) on
    its final list with the shipped fusion (the evidence cap at 1 per document, as
    eval_scifact asks, top 100); identifier statistics per document by the library's
    matcher -> abstain_scifact_<backend>.json (``idents`` replays it)."""
    import numpy as np

    from ragline.retrieval.abstain import (
        AbstainPolicy,
        Evidence,
        IdentifierStats,
        assess,
        rule_identifiers,
    )
    from ragline.retrieval.answerability import default_model
    from ragline.retrieval.doc_cap import cap_per_document_by_evidence
    from ragline.retrieval.ident_match import matches
    from ragline.retrieval.term_evidence import TermStats

    data = _tune.load_legs(args.backend)
    queries: dict[str, str] = data["queries"]
    qrels: dict[str, dict[str, int]] = data["qrels"]
    doc_of: dict[str, str] = data["doc_of"]
    text_of: dict[str, str] = data["text_of"]
    chunks = _tune.chunks()
    qids = list(queries)
    emb, qemb = _tune.embeddings(chunks, [queries[q] for q in qids], args.backend)
    cidx = {c["chunk_id"]: i for i, c in enumerate(chunks)}
    doc_text: dict[str, str] = collections.defaultdict(str)
    for c in chunks:
        doc_text[c["document_id"]] += (
            f" {c['title'] or ''} {c['contextual_header'] or ''} {c['text']}"
        )
    policy = AbstainPolicy(terms=None)  # the rules alone (what ``idents`` replays)
    # what the service decides for a hybrid search: the answerability model and the term
    # rules, with each claim's term statistics when ``terms`` has read them
    shipped = AbstainPolicy(model=default_model())
    thr = shipped.min_similarity
    terms_path = OUT / "terms_scifact.json"
    stats = (
        {r["case_id"]: r for r in json.loads(terms_path.read_text())}
        if terms_path.is_file()
        else {}
    )
    rows = []
    for qi, q in enumerate(qids):
        text = queries[q]
        dense, lex = data["dense"][q], data["lexical"][q]
        order = fused(SHIPPED, dense, lex, text_of, text, data["chunks"])
        dr = {c: i + 1 for i, (c, _) in enumerate(dense[: SHIPPED.depth])}
        lr = {c: i + 1 for i, (c, _) in enumerate(lex[: SHIPPED.depth])}
        ls = dict((c, s) for c, s in lex[: SHIPPED.depth])
        capped = cap_per_document_by_evidence(
            [k for k, _ in order],
            lambda k: doc_of[k],
            lambda k, dr=dr, lr=lr: float(
                min([r for r in (dr.get(k), lr.get(k)) if r is not None] or [1e9])
            ),
            1,
        )[:100]
        sims = emb[[cidx[k] for k in capped]] @ qemb[qi] if capped else np.zeros(0)
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
        df = {i: sum(1 for d in doc_text.values() if matches(i, d)) for i in idents}
        ist = IdentifierStats(documents=len(doc_text), df=df)
        res = assess(ev, [text], policy, ist)
        # the service reads them only when they can count (service._query_terms)
        st = stats.get(q)
        best = max((e.similarity for e in ev if e.similarity is not None), default=None)
        tp, model = shipped.terms, shipped.model
        can = best is not None and (
            (tp is not None and thr - tp.band <= best < max(thr, tp.missing_min_similarity))
            or (model is not None and (model.reads_terms or any(ch.isdigit() for ch in text)))
        )
        ts = (
            TermStats(chunks=st["chunks"], df=st["df"], top=frozenset(st.get("top") or ()))
            if can and st and st.get("chunks")
            else None
        )
        served = assess(ev, [text], shipped, ist, ts, hybrid=True)
        rows.append(
            {
                "case_id": q,
                "query": text,
                "expect_abstain": False,
                "reason": res.reason,
                "reason_shipped": served.reason,
                "ndcg@10": ndcg10([doc_of[k] for k in capped], qrels[q]),
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
                "ident_documents": len(doc_text),
                "ident_df": df,
            }
        )
    for key in ("reason", "reason_shipped"):
        hit = [r for r in rows if r[key] is not None]
        print(
            f"{key}: {len(hit)} answerable claims abstain: {[(r['case_id'], r[key]) for r in hit]}"
        )
    per = {
        "hybrid (ranking only)": {r["case_id"]: r["ndcg@10"] for r in rows},
        "hybrid, the shipped policy's abstentions as empty answers": {
            r["case_id"]: 0.0 if r["reason_shipped"] else r["ndcg@10"] for r in rows
        },
    }
    print(f"(term statistics for {len(stats)} claims; without them missing_number is unknown)")
    print_rows("hybrid as eval_scifact scores it", summary(per, qids))
    print(f"written {write(f'abstain_scifact_{args.backend}.json', rows)}")
    return 0


def _assess_row(row: dict[str, Any], policy: Any, top_k: int) -> str | None:
    """The library's ``assess`` on a collected case (golden: ``collect``; SciFact:
    ``abstain``): the abstain reason, or None."""
    from ragline.retrieval.abstain import Evidence, IdentifierStats, assess
    from ragline.retrieval.term_evidence import TermStats

    ev = [
        Evidence(
            text=h.get("text") or "",
            similarity=h.get("dense_score"),
            rerank=None,
            bm25_score=h.get("bm25_score"),
            dense_rank=h.get("dense_rank"),
            bm25_rank=h.get("bm25_rank"),
        )
        for h in (row.get("hits") or [])[:top_k]
    ]
    stats = (
        IdentifierStats(documents=row["ident_documents"], df=row["ident_df"])
        if row.get("ident_df") is not None
        else None
    )
    terms = (
        TermStats(chunks=row["chunks"], df=row["df"], top=frozenset(row.get("top") or ()))
        if row.get("df") is not None and row.get("dataset") != "beir:scifact"
        else None
    )
    return assess(ev, [row.get("question") or row.get("query") or ""], policy, stats, terms).reason


def _idents(args: argparse.Namespace) -> int:
    """The identifier rule's bar and share (``AbstainPolicy.identifier_missing_min_*``)
    over both golden sets (``collect``, replayed through ``assess`` at the e2e test's
    top_k 20) and every SciFact claim (``abstain``): best train-half F1 among the settings
    that abstain on no SciFact claim, reported on the held-out half and per set."""
    from ragline.retrieval.abstain import AbstainPolicy

    golden = json.loads((OUT / "terms_golden.json").read_text())
    scifact = json.loads(Path(args.scifact).read_text())
    for r in scifact:
        r["dataset"] = "beir:scifact"
    train = [r for r in golden if in_train(r["case_id"])]
    held = [r for r in golden if not in_train(r["case_id"])]

    def pr(rows: list[dict[str, Any]], pol: Any) -> dict[str, Any]:
        return _pr(rows, lambda r: _assess_row(r, pol, 20) is not None)

    table = []
    for bar, share in itertools.product(args.bars, args.shares):
        pol = AbstainPolicy(
            identifier_missing_min_similarity=bar, identifier_missing_min_share=share
        )
        row = {
            "bar": bar,
            "min_share": share,
            "train": pr(train, pol),
            "held_out": pr(held, pol),
            "by_set": {
                name: pr([r for r in golden if r["dataset"] == name], pol)
                for name in sorted({r["dataset"] for r in golden})
            },
            "scifact_abstained": [
                r["case_id"] for r in scifact if _assess_row(r, pol, 100) is not None
            ],
        }
        table.append(row)
        print(
            f"bar {bar} share {share}: train F1 {_f1(row['train']):.3f} held-out F1 "
            f"{_f1(row['held_out']):.3f} scifact abstained {row['scifact_abstained']}"
        )
    # ties: the highest bar (closest to the rule as it was), then the share in the middle
    # of the feasible ones at that bar
    feasible = [r for r in table if not r["scifact_abstained"] and r["bar"] <= args.max_bar]
    chosen = None
    if feasible:
        top = max(_f1(r["train"]) for r in feasible)
        best = [r for r in feasible if _f1(r["train"]) >= top - 1e-9]
        bar = max(r["bar"] for r in best)
        at_bar = sorted(r["min_share"] for r in best if r["bar"] == bar)
        middle = (at_bar[0] + at_bar[-1]) / 2
        chosen = min(
            (r for r in best if r["bar"] == bar),
            key=lambda r: (abs(r["min_share"] - middle), r["min_share"]),
        )
    print(f"chosen: {json.dumps(chosen, indent=1) if chosen else 'none feasible'}")
    print(f"written {write('idents_fit.json', [{'chosen': chosen}, *table])}")
    return 0


# ---------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    backends = ("torch", "onnx", "onnx-int8", "onnx-int8-static", "onnx-int8-fused")

    def cmd(name: str, helptext: str) -> argparse.ArgumentParser:
        s = sub.add_parser(name, help=helptext)
        s.add_argument("--backend", default="onnx-int8", choices=backends)
        return s

    cmd("legs", "both legs' top 200 per SciFact claim, cached")
    fu = cmd("fusion", "fusion variants over the cached legs")
    fu.add_argument(
        "--shipped-only", action="store_true", help="only the shipped fusion (seconds, not minutes)"
    )
    bm = cmd("bm25", "BM25 k1 / b on the real node, alone and fused")
    bm.add_argument(
        "--grid",
        default="0.45:0.5,0.6:0.3,0.6:0.5,0.6:0.75,0.9:0.4,0.9:0.5,1.2:0.5,1.2:0.75",
        help="k1:b pairs",
    )
    lx = cmd("lexical", "the lexical leg step by step on the real node")
    lx.add_argument("--reference", action="store_true", help="add the bm25s reference rows")
    lx.add_argument("--limit", type=int, help="only the first N claims")
    lx.add_argument("--grid", default="1.2:0.75,0.9:0.4", help="extra body k1:b pairs")
    tm = cmd("terms", "TermPolicy on the real node's term statistics")
    tm.add_argument("--report", help="an eval_scifact report.json (best hybrid similarity)")
    tm.add_argument("--threshold", type=float, default=0.325)
    cmd("abstain", "SciFact claims through the abstention rules (for idents)")
    sv = sub.add_parser("serve", help="start + ingest once, keep the stack up")
    sv.add_argument("--golden-only", action="store_true")
    sub.add_parser("collect", help="golden cases over the kept stack, rules off")
    i = sub.add_parser("idents", help="the identifier rule's bar, golden + SciFact replay")
    i.add_argument("--scifact", required=True, help="abstain's output")
    i.add_argument("--bars", type=float, nargs="+", default=[0.35, 0.375, 0.38, 0.39, 0.40, 0.425])
    i.add_argument(
        "--shares", type=float, nargs="+", default=[0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35]
    )
    i.add_argument(
        "--max-bar",
        type=float,
        default=0.3999,
        help="no bar above this: the pipeline's own best similarity for SciFact 173",
    )
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    run: Callable[[argparse.Namespace], int] = {
        "legs": _legs,
        "fusion": _fusion,
        "bm25": _bm25,
        "lexical": _lexical,
        "terms": _terms,
        "abstain": _abstain,
        "serve": lambda a: asyncio.run(_serve(a)),
        "collect": lambda a: asyncio.run(_collect(a)),
        "idents": _idents,
    }[args.cmd]
    try:
        rc = run(args)
    finally:
        if _node.cache_info().currsize:
            _node().close()
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
