"""Retrieval tuning for issue 20, every step recorded (a table on stdout + JSON).

    .venv/bin/python bench/tune_retrieval.py serve
        start a private platform, ingest the golden sets and SciFact train ONCE, write how
        to reach it to bench/out/tune/stack.json, keep it up until interrupted; the other
        steps run query-time variants against it (no re-ingest)
    .venv/bin/python bench/tune_retrieval.py lexical [--os-url URL]
        reference BM25 (bm25s, Lucene formula k1=1.2 b=0.75, Snowball English stemmer,
        title + text) on SciFact train at document level, then our lexical leg step by
        step: chunk vs document statistics, fields, the OpenSearch-API server's scoring
        -> bench/out/tune/lexical.json
    .venv/bin/python bench/tune_retrieval.py fusion-replica
        SciFact hybrid offline over what the kept stack has embedded (its Postgres, the
        RAGLINE_* of the stack in the environment): RRF vs score fusion and weights
        -> fusion_subset.json
(The abstention model is fitted by bench/fit_answerability.py on the answerability
benchmark; the golden-set fit that lived here is gone with retrieval/abstain_model.py.)

Needs the ``eval`` extra (bm25s, PyStemmer) for ``lexical``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
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


def _write(name: str, data: Any) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / name
    path.write_text(json.dumps(data, indent=2))
    return path


def _table(rows: Sequence[tuple[str, float | None, str]], head: str) -> str:
    lines = [f"| step | {head} | what it isolates |", "|---|---|---|"]
    lines += [f"| {s} | {'n/a' if v is None else f'{v:.4f}'} | {why} |" for s, v, why in rows]
    return "\n".join(lines)


def in_train(key: str) -> bool:
    """The fixed split: half of the cases by a hash of their id (never by their content)."""
    return hashlib.sha256(key.encode()).digest()[0] % 2 == 0


# ---------------------------------------------------------------- serve


async def _serve(args: argparse.Namespace) -> int:
    from ragline.evaluation.datasets import load_beir
    from ragline.evaluation.golden import load_golden
    from ragline.evaluation.ingest import ingest_dataset
    from ragline.platform.private import private_platform

    datasets = [load_golden(p) for p in GOLDEN_SETS if (p / "manifest.yaml").is_file()]
    if not args.golden_only:
        datasets.append(load_beir(SCIFACT, split="train", tenant="scifact", groups=("eval",)))
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
            print(f"stack ready: {_write('stack.json', state)}", flush=True)
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


# ---------------------------------------------------------------- lexical


def _scifact() -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]]]:
    from ragline.evaluation.datasets import read_qrels

    corpus = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open()]
    queries = {}
    for line in (SCIFACT / "queries.jsonl").open():
        row = json.loads(line)
        queries[str(row["_id"])] = str(row["text"])
    qrels = read_qrels(SCIFACT / "qrels" / "train.tsv")
    judged = {q: {f"scifact:{d}": s for d, s in r.items() if s > 0} for q, r in qrels.items()}
    return corpus, {q: t for q, t in queries.items() if judged.get(q)}, judged


def ndcg10(ranked: Sequence[str], rel: dict[str, int]) -> float:
    """Document-level nDCG@10 (the first occurrence of a document counts)."""
    seen: list[str] = []
    for d in ranked:
        if d not in seen:
            seen.append(d)
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(seen[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def _bm25s(
    texts: list[str],
    keys: list[str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    *,
    tf: Callable[[float], float] | None = None,
    avgdl: float | None = None,
) -> float:
    """Mean nDCG@10 of Lucene BM25 (k1=1.2, b=0.75) over ``texts``. With ``tf`` or
    ``avgdl`` given, a plain re-implementation with that term-frequency function or
    average length instead (to reproduce what a non-Lucene server does)."""
    import bm25s
    import Stemmer

    stem = Stemmer.Stemmer("english")
    qids = list(queries)
    qtexts = [queries[q] for q in qids]
    if tf is None and avgdl is None:
        tok = bm25s.tokenize(texts, stopwords="en", stemmer=stem, show_progress=False)
        model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
        model.index(tok, show_progress=False)
        qtok = bm25s.tokenize(qtexts, stopwords="en", stemmer=stem, show_progress=False)
        res, _ = model.retrieve(qtok, k=min(300, len(texts)), show_progress=False)
        return sum(ndcg10([keys[j] for j in res[i]], qrels[q]) for i, q in enumerate(qids)) / len(
            qids
        )
    docs = bm25s.tokenize(
        texts, stopwords="en", stemmer=stem, show_progress=False, return_ids=False
    )
    qs = bm25s.tokenize(qtexts, stopwords="en", stemmer=stem, show_progress=False, return_ids=False)
    postings: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for i, d in enumerate(docs):
        for term, f in collections.Counter(d).items():
            postings[term].append((i, f))
    lengths = [len(d) for d in docs]
    avg = avgdl if avgdl is not None else sum(lengths) / len(lengths)
    tf = tf or (lambda f: f)
    n_docs, total = len(docs), 0.0
    for qi, q in enumerate(qids):
        scores: dict[int, float] = collections.defaultdict(float)
        for term in set(qs[qi]):
            plist = postings.get(term, [])
            idf = math.log(1 + (n_docs - len(plist) + 0.5) / (len(plist) + 0.5))
            for i, f in plist:
                t = tf(f)
                scores[i] += idf * t / (t + 1.2 * (0.25 + 0.75 * lengths[i] / avg))
        top = sorted(scores, key=lambda i: -scores[i])[:300]
        total += ndcg10([keys[i] for i in top], qrels[q])
    return total / len(qids)


def _chunks() -> list[dict[str, Any]]:
    """SciFact as the pipeline chunks it (chunker + enricher, as bench/chunk_bench.py)."""
    cache = OUT / "scifact_chunks_v2.json"
    if cache.is_file():
        return list(json.loads(cache.read_text()))
    from chunk_bench import scifact

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
    for event, _ in scifact(SCIFACT / "corpus.jsonl", None):
        enriched = enrich_event(chunk_event(event, chunker), enricher)
        for c in enriched.chunks:
            if c.level is ChunkLevel.CHILD:
                out.append(
                    {
                        "chunk_id": c.chunk_id,
                        "tenant_id": "scifact",
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
    _write(cache.name, out)
    return out


def _os_run(
    url: str,
    index: str,
    clause: Callable[[str], dict[str, Any]],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
) -> float:
    import httpx

    async def go() -> float:
        sem = asyncio.Semaphore(4)
        async with httpx.AsyncClient(timeout=120) as c:

            async def one(q: str) -> float:
                body = {"size": 100, "_source": ["document_id"], "query": clause(queries[q])}
                async with sem:
                    resp = (await c.post(f"{url}/{index}/_search", json=body)).json()
                hits = [h["_source"]["document_id"] for h in resp["hits"]["hits"]]
                return ndcg10(hits, qrels[q])

            vals = await asyncio.gather(*(one(q) for q in queries))
        return sum(vals) / len(vals)

    return asyncio.run(go())


def _os_index(url: str, index: str, mapping: dict[str, Any], docs: list[dict[str, Any]]) -> None:
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
    httpx.post(f"{url}/{index}/_refresh", timeout=600)


def _grid(spec: str) -> list[tuple[float, float]]:
    """``"k1:b,k1:b"`` -> pairs."""
    pairs = [p.split(":") for p in spec.split(",") if p.strip()]
    return [(float(k1), float(b)) for k1, b in pairs]


def _reference(
    step: Callable[[str, float | None, str], None],
    doc_texts: list[str],
    doc_keys: list[str],
    chunks: list[dict[str, Any]],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
) -> None:
    """The reference BM25 (bm25s) on documents and on our chunks."""
    step(
        "reference: bm25s Lucene BM25, document = title + text",
        _bm25s(doc_texts, doc_keys, queries, qrels),
        "the target",
    )
    ckeys = [c["document_id"] for c in chunks]
    step(
        "bm25s over our chunks, header + text",
        _bm25s(
            [f"{c['contextual_header'] or ''} {c['text']}" for c in chunks], ckeys, queries, qrels
        ),
        "chunk vs document statistics (best chunk per document)",
    )
    step(
        "bm25s over our chunks, text only",
        _bm25s([c["text"] for c in chunks], ckeys, queries, qrels),
        "what the header's words add",
    )


def _lexical(args: argparse.Namespace) -> int:
    import httpx
    from _opensearch import mapping

    from ragline.auth.principal import Principal
    from ragline.retrieval.lexical import build_query
    from ragline.store.os_index import COPY_TARGETS, chunk_mapping

    corpus, queries, qrels = _scifact()
    if args.limit:
        queries = dict(list(queries.items())[: args.limit])
    rows: list[tuple[str, float | None, str]] = []

    def step(name: str, value: float | None, why: str) -> None:
        rows.append((name, value, why))
        print(f"{name}: {'n/a' if value is None else f'{value:.4f}'}", flush=True)

    doc_keys = [f"scifact:{c['_id']}" for c in corpus]
    doc_texts = [f"{c['title']} {c['text']}" for c in corpus]
    chunks = _chunks()
    if args.reference:
        _reference(step, doc_texts, doc_keys, chunks, queries, qrels)
    server = None
    url = args.os_url
    if url is None:
        from _opensearch import OpenSearchNode

        server = OpenSearchNode.start()
        url = server.url
    try:
        principal = Principal(tenant="scifact", groups=("eval",), subject="tune")
        # the chunk cache carries more than the index has fields (embed_text): the strict
        # mapping takes only its own
        fields = set(chunk_mapping()["mappings"]["properties"]) - COPY_TARGETS
        docs = [
            {**{k: v for k, v in c.items() if k in fields}, "acl_groups": ["eval"]} for c in chunks
        ]
        whole = [
            {
                "chunk_id": k,
                "document_id": k,
                "tenant_id": "scifact",
                "acl_groups": ["eval"],
                "text": t,
            }
            for k, t in zip(doc_keys, doc_texts, strict=True)
        ]
        _os_index(url, "tune-docs", chunk_mapping(), whole)
        step(
            "server: documents, title + text in one field",
            _os_run(url, "tune-docs", lambda t: {"match": {"text": t}}, queries, qrels),
            "the server's BM25 on the reference's documents",
        )
        _os_index(url, "tune-chunks", chunk_mapping(), docs)
        old = ["text", "contextual_header^0.5", "title^0.5", "section_path^0.5"]
        step(
            "server: chunks, old query (best_fields text, header/title/section ^0.5)",
            _os_run(
                url,
                "tune-chunks",
                lambda t: {"multi_match": {"query": t, "fields": old, "type": "best_fields"}},
                queries,
                qrels,
            ),
            "before: the best single field counts",
        )
        step(
            "server: chunks, text only",
            _os_run(url, "tune-chunks", lambda t: {"match": {"text": t}}, queries, qrels),
            "",
        )
        step(
            "server: chunks, most_fields text + title^0.5",
            _os_run(
                url,
                "tune-chunks",
                lambda t: {
                    "multi_match": {
                        "query": t,
                        "fields": ["text", "title^0.5"],
                        "type": "most_fields",
                    }
                },
                queries,
                qrels,
            ),
            "fields summed instead of the best one",
        )
        step(
            "server: chunks, body = header + text (production query)",
            _os_run(
                url,
                "tune-chunks",
                lambda t: build_query(principal, t, [], limit=100)["query"],
                queries,
                qrels,
            ),
            "after: lexical.build_query on the v2 mapping",
        )
        prod = lambda t: build_query(principal, t, [], limit=100)["query"]  # noqa: E731
        step(
            "server: documents, title + text as body (production query and k1/b)",
            _os_run(url, "tune-docs", prod, queries, qrels),
            "chunk vs document level on the real engine, everything else equal",
        )
        for k1, b in _grid(args.grid):
            name = f"tune-k{k1}-b{b}".replace(".", "_")
            _os_index(url, name, mapping(k1, b), docs)
            step(
                f"server: chunks, production query, body BM25 k1 {k1} b {b}",
                _os_run(url, name, prod, queries, qrels),
                "k1 / b (a static per-field setting: one index per pair)",
            )
            httpx.delete(f"{url}/{name}", timeout=120)
    finally:
        if server is not None:
            server.close()
    print(_table(rows, "nDCG@10 (SciFact train, document level)"))
    path = _write("lexical.json", [{"step": s, "ndcg@10": v, "isolates": w} for s, v, w in rows])
    print(f"written {path}")
    return 0


# ---------------------------------------------------------------- fusion replica


def _fusion_replica(args: argparse.Namespace) -> int:
    """SciFact hybrid offline, over what the kept stack has embedded so far: the chunks and
    their pipeline embeddings from Postgres (RAGLINE_* of the stack in the environment),
    query embeddings from the same model, the lexical leg on a fresh local server with the
    production query, fusion by the library's own functions. Writes
    fusion_subset.json."""
    import httpx
    import numpy as np
    import psycopg
    from _opensearch import OpenSearchNode

    from ragline.auth.principal import Principal
    from ragline.config import Settings
    from ragline.embedding.model import SentenceTransformerEmbedder
    from ragline.retrieval.fusion import rrf, score_fusion
    from ragline.retrieval.lexical import build_query
    from ragline.store.os_index import chunk_mapping

    with psycopg.connect(Settings().admin_dsn()) as conn:
        rows = conn.execute(
            "select c.chunk_id, c.document_id, c.text, c.contextual_header, c.embedding::text"
            " from chunks c join documents d using (tenant_id, document_id)"
            " where c.tenant_id = 'scifact' and c.level = 'child' and c.embedding is not null"
            " and d.status = 'indexed'"
        ).fetchall()
    cids = [r[0] for r in rows]
    doc_of = {r[0]: r[1] for r in rows}
    emb = np.array([json.loads(r[4]) for r in rows], dtype=np.float32)
    _, queries, qrels = _scifact()
    docs = set(doc_of.values())
    queries = {q: t for q, t in queries.items() if all(d in docs for d in qrels[q])}
    qids = list(queries)
    print(f"subset: {len(docs)} documents, {len(rows)} chunks, {len(qids)} queries", flush=True)
    qemb = SentenceTransformerEmbedder(threads=2).encode([queries[q] for q in qids])
    server = OpenSearchNode.start()
    principal = Principal(tenant="scifact", groups=("eval",), subject="tune")
    try:
        src = [
            {
                "chunk_id": r[0],
                "document_id": r[1],
                "tenant_id": "scifact",
                "acl_groups": ["eval"],
                "text": r[2],
                "contextual_header": r[3],
            }
            for r in rows
        ]
        _os_index(server.url, "replica", chunk_mapping(), src)

        def lexical(q: str) -> list[tuple[str, float]]:
            body = {
                "size": 50,
                "_source": ["chunk_id"],
                **build_query(principal, queries[q], [], limit=50),
            }
            hits = httpx.post(f"{server.url}/replica/_search", json=body, timeout=120).json()
            return [(h["_source"]["chunk_id"], float(h["_score"])) for h in hits["hits"]["hits"]]

        lex = {q: lexical(q) for q in qids}
    finally:
        server.close()
    sims = {q: emb @ qemb[i] for i, q in enumerate(qids)}
    dense = {q: [(cids[j], float(sims[q][j])) for j in np.argsort(-sims[q])[:50]] for q in qids}

    def mean_ndcg(order: Callable[[str], list[str]]) -> float:
        return sum(ndcg10([doc_of[k] for k in order(q)], qrels[q]) for q in qids) / len(qids)

    def ids(items: list[tuple[str, float]]) -> list[str]:
        return [k for k, _ in items]

    res: dict[str, float] = {
        "lexical": mean_ndcg(lambda q: ids(lex[q])),
        "dense": mean_ndcg(lambda q: ids(dense[q])),
    }
    for k in (20, 60):
        res[f"rrf k={k}"] = mean_ndcg(
            lambda q, k=k: [
                h.key for h in rrf({"dense": ids(dense[q]), "lexical": ids(lex[q])}, k=k)
            ]
        )
    for wd, wl in ((1.0, 1.0), (1.5, 1.0), (2.0, 1.0), (3.0, 1.0), (1.0, 0.5)):
        res[f"score wd={wd} wl={wl}"] = mean_ndcg(
            lambda q, wd=wd, wl=wl: [
                h.key
                for h in score_fusion(
                    {"dense": dense[q], "lexical": lex[q]}, weights={"dense": wd, "lexical": wl}
                )
            ]
        )
    for name, value in res.items():
        print(f"{name}: {value:.4f}")
    _write("fusion_subset.json", {"documents": len(docs), "queries": len(qids), "ndcg@10": res})
    return 0


def main(argv: list[str]) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="start + ingest once, keep the stack up")
    s.add_argument("--golden-only", action="store_true")
    lx = sub.add_parser("lexical", help="reference BM25 and our lexical leg, step by step")
    lx.add_argument("--os-url", help="an OpenSearch to use (default: start a local node)")
    lx.add_argument("--limit", type=int, help="only the first N queries")
    lx.add_argument(
        "--grid",
        default="0.6:0.5,0.9:0.5,1.2:0.5,0.6:0.75,0.9:0.75,1.2:0.75,0.9:0.3",
        help="body BM25 k1:b pairs for the production query on chunks ('' for none)",
    )
    lx.add_argument(
        "--no-reference",
        dest="reference",
        action="store_false",
        help="skip the bm25s reference rows (minutes; they do not depend on the engine)",
    )
    sub.add_parser("fusion-replica", help="SciFact hybrid offline over the kept stack's embeddings")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    if args.cmd == "serve":
        rc = asyncio.run(_serve(args))
    elif args.cmd == "lexical":
        rc = _lexical(args)
    else:
        rc = _fusion_replica(args)
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
