"""Fusion on paraphrases (issue 37 item 3): does hybrid keep up with its better leg when
the question shares no content word with the answer?

Two paraphrase sets are GENERATED, seeded, from SciFact train (no case written or
picked by hand; ``ragline.evaluation.paraphrase``): a claim's content words whose stem
(the lexical index's own ``english`` analyzer, ``_analyze`` on the node) occurs in one of
its relevant abstracts are

- ``replaced`` (the default set, length-preserving): each by the nearest word of the
  corpus's vocabulary (words in >= ``--min-df`` abstracts) by the service's own
  embedding model, among words whose stem is in no relevant abstract and not in the
  claim; a claim is in the set when every shared word found a substitute (its number of
  content words is kept) and at least ``--min-words`` content words remain;
- ``deleted`` (the first set, kept for comparison): deleted; in the set when at least
  ``--min-words`` content words are left. Its questions are short, and query length
  alone separates them from the claims (AUC 0.88), so a rule fitted on it can learn
  "short question".

Either way the rest of the claim (stop words, punctuation) stays, the result is
re-analysed on the node and a case with any content word of its answer left out, and
all its relevant abstracts must be indexed. The lexical leg can only match noise; the
dense leg still reads the meaning. The report prints the query lengths of both sets
beside the claims' (content and whitespace words, AUC by length).

Over a stack where SciFact was ingested by the pipeline (``make eval-scifact``, or
``bench/eval_scifact.py --hold``; pass its ``RAGLINE_STATE_DIR`` and
``RAGLINE_OPENSEARCH_URL``), it runs both legs exactly as the service does (the
library's ``LexicalSearcher.search`` and ``dense_search`` under the tenant's scope,
100 hits each, the query embedded by the service's model) for the paraphrases and for
the original claims (with each query's term statistics, ``term_stats``, and the index's
chunk count), caches the legs in ``--out``/legs.json, then fuses them with every
``RankingSettings.score_norm``, RRF, and the service's own ``candidates.fuse`` (its
defaults (the fitted coverage-or-evidence pair), each query's coverage from its
cached term statistics; the ramps of ``EVIDENCE_RAMPS`` and ``COVERAGE_RAMPS`` alone; the
agreement ramps of ``COSINE_RAMPS``, over each BM25 hit's cosine to the query, dumped as
``lexical_cosine``) and prints document-level recall@10 and nDCG@10 per leg and per
fusion: each paraphrase set's two seeded halves (even / odd positions of the seeded
order; fit on "fit", report "held") and the original claims, all and per half (hybrid
must not drop). ``--test`` adds the SciFact
test claims when the archive's ``qrels/test.tsv`` is there. ``--reuse`` fuses a cached
dump again; one from before the two sets reports its paraphrases as ``deleted``.

    RAGLINE_STATE_DIR=... RAGLINE_OPENSEARCH_URL=... \\
        .venv/bin/python bench/paraphrase_fusion.py [--limit N] [--min-words 2] [--seed 37]
        [--sets replaced,deleted] [--min-df 3] [--min-similarity 0] [--test] [--reuse]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

from _paths import OUT, SCIFACT

from ragline.evaluation.paraphrase import Paraphrase, Term, rewrite

TENANT, GROUP = "scifact", "eval"
_DOC = "scifact:"  # the evaluation harness's document ids (evaluation/datasets.py)
LIMIT = 100
# the evidence weighting alone (RAGLINE_QUERY_LEXICAL_EVIDENCE_NONE / _RAMP): (none, full)
EVIDENCE_RAMPS: tuple[tuple[float, float], ...] = ((1.0, 1.8), (1.2, 2.0), (1.4, 2.2))
# the opt-in agreement weighting (RAGLINE_QUERY_LEXICAL_COSINE_GAP / _RAMP): (gap, ramp)
COSINE_RAMPS: tuple[tuple[float, float], ...] = ((0.05, 0.1), (0.1, 0.1))
# the coverage weighting alone (RAGLINE_QUERY_LEXICAL_COVERAGE_NONE / _RAMP): (none, full)
COVERAGE_RAMPS: tuple[tuple[float, float], ...] = ((0.35, 0.65),)
_TIMEOUT_S = 60.0  # a benchmark on a loaded machine: waiting beats failing


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seed", type=int, default=37)
    p.add_argument("--min-words", type=int, default=2)
    p.add_argument(
        "--sets",
        default="replaced,deleted",
        help="paraphrase sets to run: replaced (length-preserving), deleted (the first set)",
    )
    p.add_argument("--concurrency", type=int, default=2, help="cases in flight")
    p.add_argument("--min-df", type=int, default=3, help="vocabulary: words in >= N abstracts")
    p.add_argument(
        "--min-similarity", type=float, default=0.0, help="a substitute's cosine at least"
    )
    p.add_argument("--limit", type=int, help="at most N claims (seeded sample)")
    p.add_argument("--out", type=Path, default=OUT / "paraphrase")
    p.add_argument("--reuse", action="store_true", help="fuse the cached legs.json only")
    p.add_argument("--test", action="store_true", help="also the SciFact test claims (claims)")
    return p.parse_args(argv)


def _load(split: str = "train") -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    docs = {}
    for line in (SCIFACT / "corpus.jsonl").open():
        d = json.loads(line)
        docs[str(d["_id"])] = f"{d.get('title') or ''} {d['text']}"
    queries = {}
    for line in (SCIFACT / "queries.jsonl").open():
        q = json.loads(line)
        queries[str(q["_id"])] = q["text"]
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (SCIFACT / "qrels" / f"{split}.tsv").open():
        if line.startswith("query-id"):
            continue
        qid, did, _ = line.strip().split("\t")
        qrels[qid].add(did)
    return docs, queries, qrels


async def _stems(client: Any, text: str) -> list[tuple[int, int, str]]:
    resp = await client.indices.analyze(
        body={"analyzer": "english", "text": text}, request_timeout=_TIMEOUT_S
    )
    return [(t["start_offset"], t["end_offset"], t["token"]) for t in resp.get("tokens", ())]


async def _terms(client: Any, text: str) -> list[Term]:
    return [Term(s, e, stem) for s, e, stem in await _stems(client, text)]


async def neighbours(
    client: Any, embedder: Any, docs: dict[str, str], claims: list[str], a: argparse.Namespace
) -> Any:
    """The substitute source of the length-preserving set: the corpus's words (found in
    >= ``--min-df`` abstracts), each with its stem by the index's analyzer and its vector
    by the service's model (cached in ``--out``/vocab-df<N>.npz), nearest by cosine; the
    ``claims``' own words outside that vocabulary are embedded up front."""
    import numpy as np

    from ragline.evaluation.paraphrase import Neighbours, vocabulary

    cache = a.out / f"vocab-df{a.min_df}.npz"
    if cache.exists():
        z = np.load(cache)
        words, stems, vecs = list(z["words"]), list(z["stems"]), z["vectors"]
    else:
        candidates = vocabulary(docs.values(), min_df=a.min_df)
        words, stems = [], []
        for i in range(0, len(candidates), 2000):  # one _analyze per 2,000 words
            batch = candidates[i : i + 2000]
            text = " ".join(batch)
            starts = {}
            pos = 0
            for w in batch:
                starts[pos] = w
                pos += len(w) + 1
            for start, _, stem in await _stems(client, text):
                if start in starts:  # a stop word yields no token: not a content word
                    words.append(starts[start])
                    stems.append(stem)
        rows = []
        for i in range(0, len(words), 512):
            rows.extend(await embedder.embed(words[i : i + 512]))
        vecs = np.stack(rows).astype(np.float32)
        np.savez(cache, words=np.array(words), stems=np.array(stems), vectors=vecs)
    words = [str(w) for w in words]
    known = set(words)
    extra = sorted(
        {
            c[s:e].lower()
            for c in claims
            for s, e, _ in await _stems(client, c)
            if c[s:e].lower() not in known
        }
    )
    own = dict(zip(extra, await embedder.embed(extra), strict=True)) if extra else {}
    return Neighbours(
        words, [str(s) for s in stems], vecs, own.__getitem__, min_similarity=a.min_similarity
    )


async def paraphrase(
    client: Any, claim: str, answers: list[str], substitute: Any = None
) -> tuple[Paraphrase, int]:
    """The claim with every word whose stem is in an answer replaced (``substitute``) or
    deleted (None), and how many content words of the result the index's analyzer still
    finds in an answer (0 by construction; checked on the node)."""
    answer_stems: set[str] = set()
    for a in answers:
        answer_stems |= {s for _, _, s in await _stems(client, a)}
    p = rewrite(claim, await _terms(client, claim), answer_stems, substitute)
    leaks = sum(t.stem in answer_stems for t in await _terms(client, p.text))
    return p, leaks


async def collect(a: argparse.Namespace) -> dict[str, Any]:
    from ragline.auth.principal import Principal
    from ragline.config import EmbeddingModelSettings, Settings
    from ragline.retrieval.dense import dense_search
    from ragline.retrieval.embed import ModelQueryEmbedder
    from ragline.retrieval.filters import compile_predicates
    from ragline.retrieval.hydrate import hydrate
    from ragline.retrieval.lexical import LexicalSearcher
    from ragline.retrieval.scope import rls_transaction
    from ragline.retrieval.term_evidence import asked_about
    from ragline.store.os_client import make_client
    from ragline.store.pool import open_pool

    if a.test and not (SCIFACT / "qrels" / "test.tsv").exists():
        raise SystemExit(f"--test: no {SCIFACT / 'qrels' / 'test.tsv'} (the BEIR archive has it)")
    docs, queries, qrels = _load()
    settings = Settings()
    client = make_client(settings)
    admin = await open_pool(settings.admin_dsn(), name="paraphrase-admin")
    pool = await open_pool(settings.query_dsn(), name="paraphrase-query")
    embedder = await ModelQueryEmbedder.load(EmbeddingModelSettings())
    who = Principal(tenant=TENANT, groups=(GROUP,), subject="bench")
    preds = compile_predicates(None, include_superseded=False, effective_at=date.today())
    lexical = LexicalSearcher(client, index_prefix=settings.opensearch_index_prefix)
    try:
        async with admin.connection() as conn:
            cur = await conn.execute(
                "SELECT document_id FROM documents WHERE tenant_id = %s AND status = 'indexed'",
                (TENANT,),
            )
            indexed = {str(r[0]).removeprefix(_DOC) for r in await cur.fetchall()}
            cur = await conn.execute(
                "SELECT chunk_id, document_id FROM chunks WHERE tenant_id = %s", (TENANT,)
            )
            doc_of = {str(c): str(d).removeprefix(_DOC) for c, d in await cur.fetchall()}
        ids = sorted(q for q in qrels if qrels[q] <= indexed)
        random.Random(a.seed).shuffle(ids)
        if a.limit:
            ids = ids[: a.limit]
        sets = [x.strip() for x in a.sets.split(",") if x.strip()]
        if not set(sets) <= {"replaced", "deleted"}:
            raise SystemExit(f"--sets: replaced and/or deleted, not {a.sets!r}")
        near = (
            await neighbours(client, embedder, docs, [queries[q] for q in ids], a)
            if "replaced" in sets
            else None
        )
        cases = []
        for pos, qid in enumerate(ids):
            answers = [docs[d] for d in sorted(qrels[qid])]
            case: dict[str, Any] = {
                "id": qid,
                "claim": queries[qid],
                "relevant": sorted(qrels[qid]),
                "split": "train",
                # the seeded halves: fusion is fitted on "fit", reported on "held"
                "half": "fit" if pos % 2 == 0 else "held",
                "sets": {},
            }
            for which in sets:
                p, leaks = await paraphrase(
                    client, queries[qid], answers, near if which == "replaced" else None
                )
                # deleted: >= min-words content words left; replaced: every shared word
                # replaced (the length kept) and >= min-words content words in all
                ok = (
                    p.kept >= a.min_words
                    if which == "deleted"
                    else p.dropped == 0 and p.replaced > 0 and p.kept + p.replaced >= a.min_words
                )
                case["sets"][which] = {
                    "text": p.text,
                    "kept": p.kept,
                    "replaced": p.replaced,
                    "dropped": p.dropped,
                    "swaps": p.swaps,
                    "leaks": leaks,
                    "in_set": ok and leaks == 0,
                }
            cases.append(case)
        if a.test:  # SciFact test claims over the same corpus: out of sample, claims only
            _, _, test_qrels = _load("test")
            for qid in sorted(q for q in test_qrels if test_qrels[q] <= indexed):
                cases.append(
                    {
                        "id": qid,
                        "claim": queries[qid],
                        "relevant": sorted(test_qrels[qid]),
                        "in_set": False,
                        "split": "test",
                    }
                )

        async def legs(text: str) -> dict[str, Any]:
            (vec,) = await embedder.embed([text])
            lex = await lexical.search(who, text, preds, limit=LIMIT, timeout_s=_TIMEOUT_S)
            async with rls_transaction(pool, who) as conn:
                dense = await dense_search(conn, who, vec, preds, limit=LIMIT)
                # the query's cosine to every BM25 hit (what hydrate reads for the service)
                rows = await hydrate(conn, who, [h.chunk_id for h in lex], preds, vector=vec)
            stats = await lexical.term_stats(
                who,
                asked_about(text),  # as the service reads it (candidates._lexical)
                preds,
                top_chunk_id=lex[0].chunk_id if lex else None,
                timeout_s=_TIMEOUT_S,
            )
            return {
                "dense": [(h.chunk_id, h.similarity) for h in dense],
                "lexical": [(h.chunk_id, h.score) for h in lex],
                "lexical_cosine": {
                    k: r.similarity for k, r in rows.items() if r.similarity is not None
                },
                "terms": None
                if stats is None
                else {"chunks": stats.chunks, "df": stats.df, "top": sorted(stats.top)},
            }

        chunks = await lexical.chunk_count(who, timeout_s=_TIMEOUT_S)
        gate = asyncio.Semaphore(a.concurrency)

        async def case_legs(c: dict[str, Any]) -> None:
            async with gate:
                c["legs"] = {"claim": await legs(c["claim"])}
                for which, p in c.get("sets", {}).items():
                    if p["in_set"]:
                        c["legs"][which] = await legs(p["text"])

        await asyncio.gather(*(case_legs(c) for c in cases))
    finally:
        await client.close()
        await pool.close()
        await admin.close()
        embedder.close()
    return {
        "seed": a.seed,
        "min_words": a.min_words,
        "indexed_documents": len(indexed),
        "index_chunks": chunks,
        "doc_of": doc_of,
        "cases": cases,
    }


# ------------------------------------------------------------------------ metrics


def _docs_ranked(hits: list[str], doc_of: dict[str, str]) -> list[str]:
    out: list[str] = []
    for h in hits:
        d = doc_of.get(h, h)
        if d not in out:
            out.append(d)
    return out


def _metrics(ranked: list[str], relevant: set[str]) -> tuple[float, float]:
    top = ranked[:10]
    recall = len(relevant & set(top)) / len(relevant)
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(top) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return recall, dcg / ideal


def fusions(chunks: int) -> dict[str, Any]:
    """Each fusion over the cached legs: RRF, the unweighted score fusions, and the
    service's own ``candidates.fuse`` with its default settings (evidence weighting over
    the index's ``chunks``)."""
    from ragline.retrieval.candidates import fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.fusion import NORMS, rrf, score_fusion
    from ragline.retrieval.lexical import LexicalHit
    from ragline.retrieval.settings import RankingSettings

    def by_norm(norm: str) -> Any:
        return lambda legs, _cos, _cover: [h.key for h in score_fusion(legs, norm=norm)]

    def by_rank(legs: dict[str, list[tuple[str, float]]], _cos: Any, _cover: Any) -> list[str]:
        return [h.key for h in rrf({k: [i for i, _ in v] for k, v in legs.items()})]

    def service(settings: RankingSettings) -> Any:
        def run(
            legs: dict[str, list[tuple[str, float]]], cos: dict[str, float], cover: float | None
        ) -> list[str]:
            dense = [
                DenseHit(chunk_id=i, similarity=s, rank=r)
                for r, (i, s) in enumerate(legs["dense"], 1)
            ]
            lex = [
                LexicalHit(chunk_id=i, score=s, rank=r)
                for r, (i, s) in enumerate(legs["lexical"], 1)
            ]
            return [
                h.key
                for h in fuse(dense, lex, settings, chunks=chunks, cosines=cos, coverage=cover)
            ]

        return run

    out: dict[str, Any] = {"rrf k60": by_rank}
    for norm in NORMS:
        out[f"score {norm}"] = by_norm(norm)
    d = RankingSettings()  # the fitted coverage-or-evidence pair (docs/evaluation.md)
    c_none, e_none = d.lexical_coverage_none, d.lexical_evidence_none
    out[
        f"service, defaults: coverage ({c_none}, {c_none + d.lexical_coverage_ramp:.2f}) or "
        f"evidence ({e_none}, {e_none + d.lexical_evidence_ramp})"
    ] = service(d)
    plain = {
        "lexical_evidence_none": 0.0,
        "lexical_evidence_ramp": 0.0,
        "lexical_coverage_none": 0.0,
        "lexical_coverage_ramp": 0.0,
    }
    out["service, every lexical weighting off (before)"] = service(RankingSettings(**plain))
    for none, full in EVIDENCE_RAMPS:
        ramp = RankingSettings(
            **{**plain, "lexical_evidence_none": none, "lexical_evidence_ramp": full - none}
        )
        out[f"service, evidence ramp ({none}, {full}) alone"] = service(ramp)
    for none, full in COVERAGE_RAMPS:
        cover = RankingSettings(
            **{**plain, "lexical_coverage_none": none, "lexical_coverage_ramp": full - none}
        )
        out[f"service, coverage ramp ({none}, {full}) alone"] = service(cover)
    for gap, width in COSINE_RAMPS:
        agree = RankingSettings(**plain, lexical_cosine_gap=gap, lexical_cosine_ramp=width)
        out[f"service, cosine gap {gap} ramp {width}"] = service(agree)
    return out


def paraphrase_sets(case: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A case's paraphrases by set ("replaced", "deleted"), each with its ``legs`` key;
    a dump from before the length-preserving set holds one deletion set."""
    if "sets" in case:
        return {k: {**v, "legs": k} for k, v in case["sets"].items()}
    if "paraphrase" not in case:
        return {}
    return {
        "deleted": {
            "text": case["paraphrase"],
            "kept": case["kept"],
            "replaced": 0,
            "dropped": case["dropped"],
            "in_set": case["in_set"],
            "legs": "paraphrase",
        }
    }


def groups(data: dict[str, Any]) -> dict[str, list[tuple[dict[str, Any], list[str]]]]:
    """(legs, relevant) per reported set: each paraphrase set's two seeded halves (fusion
    fitted on "fit"), the original train claims, and the test claims when collected."""
    out: dict[str, list[tuple[dict[str, Any], list[str]]]] = defaultdict(list)
    for i, c in enumerate(data["cases"]):
        split = c.get("split", "train")
        if split == "test":
            out["claims, test"].append((c["legs"]["claim"], c["relevant"]))
            continue
        out["claims, train"].append((c["legs"]["claim"], c["relevant"]))
        half = c.get("half", "fit" if i % 2 == 0 else "held")
        out[f"claims, {half} half"].append((c["legs"]["claim"], c["relevant"]))
        for which, p in paraphrase_sets(c).items():
            if p["in_set"] and p["legs"] in c["legs"]:
                legs = c["legs"][p["legs"]]
                out[f"{which}, {half} half"].append((legs, c["relevant"]))
                out[f"{which}, all"].append((legs, c["relevant"]))
    return dict(out)


def _quantiles(xs: list[int]) -> str:
    ys = sorted(xs)
    q = [ys[min(len(ys) - 1, int(f * len(ys)))] for f in (0.1, 0.25, 0.5, 0.75, 0.9)]
    return f"mean {sum(ys) / len(ys):.1f}, p10/p25/p50/p75/p90 " + "/".join(map(str, q))


def auc(pos: list[float], neg: list[float]) -> float:
    """P(a ``pos`` value > a ``neg`` value), ties half (Mann-Whitney): 0.5 = no separation."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def lengths(data: dict[str, Any]) -> list[str]:
    """Query lengths of the claims and of each paraphrase set (content words by the
    index's analyzer, and whitespace words), with the AUC of "claim vs paraphrase" by
    content-word count: a set that keeps the length sits near 0.5."""
    lines = []
    train = [c for c in data["cases"] if c.get("split", "train") == "train"]
    claims_terms: list[int] = []
    claims_words = [len(c["claim"].split()) for c in train]
    for c in train:
        sets = paraphrase_sets(c)
        if sets:
            p = next(iter(sets.values()))
            claims_terms.append(p["kept"] + p["replaced"] + p["dropped"])
    if claims_terms:
        lines.append(f"claims ({len(train)}): content words {_quantiles(claims_terms)}")
    lines.append(f"claims: whitespace words {_quantiles(claims_words)}")
    names = sorted({k for c in train for k in paraphrase_sets(c)})
    for which in names:
        ps = [paraphrase_sets(c)[which] for c in train if which in paraphrase_sets(c)]
        ps = [p for p in ps if p["in_set"]]
        if not ps:
            continue
        terms = [p["kept"] + p["replaced"] for p in ps]
        words = [len(p["text"].split()) for p in ps]
        lines.append(
            f"{which} ({len(ps)}): content words {_quantiles(terms)}; whitespace words "
            f"{_quantiles(words)}; AUC claim vs paraphrase by content words "
            f"{auc([float(x) for x in claims_terms], [float(x) for x in terms]):.2f}"
        )
        sims = [s[2] for p in ps for s in p.get("swaps", ())]
        if sims:
            lines.append(
                f"{which}: {len(sims)} words replaced, cosine to the replaced word "
                f"median {sorted(sims)[len(sims) // 2]:.2f}"
            )
    return lines


def coverage(legs: dict[str, Any]) -> float | None:
    """The IDF share of the query's words (those the corpus has) that the best BM25 hit
    holds, from the cached term statistics: what the service reads before fusion
    (``TermStats.top_coverage_present``); None for a dump without them."""
    from ragline.retrieval.term_evidence import TermStats

    t = legs.get("terms")
    if not t:
        return None
    return TermStats(
        chunks=int(t["chunks"]), df=dict(t["df"]), top=frozenset(t["top"])
    ).top_coverage_present


def report(data: dict[str, Any]) -> dict[str, Any]:
    doc_of = data["doc_of"]
    # the chunk count the service would read (older dumps: every chunk of the tenant)
    chunks = int(data.get("index_chunks") or len(doc_of))
    runs: dict[str, Any] = {
        "lexical": lambda legs, _cos, _cover: [i for i, _ in legs["lexical"]],
        "dense": lambda legs, _cos, _cover: [i for i, _ in legs["dense"]],
        **fusions(chunks),
    }
    table: dict[str, dict[str, dict[str, float]]] = {}
    for which, rows in groups(data).items():
        res: dict[str, dict[str, float]] = {}
        for name, run in runs.items():
            rs, ns = [], []
            for legs_raw, relevant in rows:
                legs = {
                    k: [(str(x[0]), float(x[1])) for x in legs_raw[k]] for k in ("dense", "lexical")
                }
                cos = legs_raw.get("lexical_cosine") or {}
                r, n = _metrics(
                    _docs_ranked(run(legs, cos, coverage(legs_raw)), doc_of), set(relevant)
                )
                rs.append(r)
                ns.append(n)
            res[name] = {
                "recall@10": round(sum(rs) / len(rs), 4),
                "ndcg@10": round(sum(ns) / len(ns), 4),
                "n": len(rows),
            }
        table[which] = res
    return table


async def run(a: argparse.Namespace) -> str:
    """Collect the legs (or ``--reuse`` them), fuse, write ``--out``/report.{json,txt} and
    return the text report. Inside ``eval_scifact.py --paraphrase`` the environment is
    the private stack's (``make eval-paraphrase``)."""
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "legs.json"
    if a.reuse:
        data = json.loads(path.read_text())
    else:
        data = await collect(a)
        path.write_text(json.dumps(data))
    table = report(data)
    (a.out / "report.json").write_text(json.dumps(table, indent=2))
    train = [c for c in data["cases"] if c.get("split", "train") == "train"]
    sizes = ", ".join(
        f"{which} {sum(paraphrase_sets(c).get(which, {}).get('in_set', False) for c in train)}"
        for which in ("replaced", "deleted")
    )
    lines = [
        f"SciFact train, {data['indexed_documents']} abstracts indexed; {len(train)} claims; "
        f"paraphrase sets: {sizes} (seed {data['seed']}, >= {data['min_words']} content words)",
        *lengths(data),
        f"index chunks (the evidence unit's N): {data.get('index_chunks') or len(data['doc_of'])}",
    ]
    for which, res in table.items():
        n = next(iter(res.values()))["n"]
        lines.append(f"\n{which} ({n}):\n| run | recall@10 | nDCG@10 |\n|---|---|---|")
        for name, m in res.items():
            lines.append(f"| {name} | {m['recall@10']:.3f} | {m['ndcg@10']:.3f} |")
    text = "\n".join(lines) + "\n"
    (a.out / "report.txt").write_text(text)
    return text


async def main(argv: list[str]) -> int:
    print(await run(parse_args(argv)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
