"""Fusion on paraphrases (issue 37 item 3): does hybrid keep up with its better leg when
the question shares no content word with the answer?

The paraphrase set is GENERATED, seeded, from SciFact train (no case written or picked
by hand): each claim loses every content word whose stem (the lexical index's own
``english`` analyzer, ``_analyze`` on the node) occurs in one of its relevant abstracts;
the rest of the claim, stop words included, is the question. A claim keeps its place
when at least ``--min-words`` content words are left (so the question still says
something) and all its relevant abstracts are indexed. By construction the lexical leg
can only match noise; the dense leg still reads what is left of the meaning.

Over a stack where SciFact was ingested by the pipeline (``make eval-scifact``, or
``bench/eval_scifact.py --hold``; pass its ``RAGLINE_STATE_DIR`` and
``RAGLINE_OPENSEARCH_URL``), it runs both legs exactly as the service does (the
library's ``LexicalSearcher.search`` and ``dense_search`` under the tenant's scope,
100 hits each, the query embedded by the service's model) for the paraphrases and for
the original claims (with each query's term statistics, ``term_stats``, and the index's
chunk count), caches the legs in ``--out``/legs.json, then fuses them with every
``RankingSettings.score_norm``, RRF, and the service's own ``candidates.fuse`` (its
defaults and the evidence ramps of ``EVIDENCE_RAMPS``) and prints document-level
recall@10 and nDCG@10 per leg and per fusion: the paraphrase set's two seeded halves
(even / odd positions of the seeded order; fit on "fit", report "held") and the
original claims, all and per half (hybrid must not drop). ``--test`` adds the SciFact
test claims when the archive's ``qrels/test.tsv`` is there.

    RAGLINE_STATE_DIR=... RAGLINE_OPENSEARCH_URL=... \\
        .venv/bin/python bench/paraphrase_fusion.py [--limit N] [--min-words 2] [--seed 37]
        [--test] [--reuse]
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

TENANT, GROUP = "scifact", "eval"
_DOC = "scifact:"  # the evaluation harness's document ids (evaluation/datasets.py)
LIMIT = 100
# the opt-in evidence weighting (RAGLINE_QUERY_LEXICAL_EVIDENCE_NONE / _RAMP): (none, full) shown
EVIDENCE_RAMPS: tuple[tuple[float, float], ...] = ((1.0, 1.8), (1.2, 2.0), (1.4, 2.2))
_TIMEOUT_S = 60.0  # a benchmark on a loaded machine: waiting beats failing


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seed", type=int, default=37)
    p.add_argument("--min-words", type=int, default=2)
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


async def paraphrase(client: Any, claim: str, answers: list[str]) -> tuple[str, int, int]:
    """The claim without the words whose stem is in an answer: (question, content words
    kept, content words dropped)."""
    answer_stems: set[str] = set()
    for a in answers:
        answer_stems |= {s for _, _, s in await _stems(client, a)}
    out, pos, kept, dropped = [], 0, 0, 0
    for start, end, stem in await _stems(client, claim):
        if stem in answer_stems:
            out.append(claim[pos:start])
            pos = end
            dropped += 1
        else:
            kept += 1
    out.append(claim[pos:])
    question = " ".join("".join(out).split())
    return question, kept, dropped


async def collect(a: argparse.Namespace) -> dict[str, Any]:
    from ragline.auth.principal import Principal
    from ragline.config import EmbeddingModelSettings, Settings
    from ragline.retrieval.dense import dense_search
    from ragline.retrieval.embed import ModelQueryEmbedder
    from ragline.retrieval.filters import compile_predicates
    from ragline.retrieval.lexical import LexicalSearcher
    from ragline.retrieval.scope import rls_transaction
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
        cases = []
        for pos, qid in enumerate(ids):
            q, kept, dropped = await paraphrase(
                client, queries[qid], [docs[d] for d in sorted(qrels[qid])]
            )
            cases.append(
                {
                    "id": qid,
                    "claim": queries[qid],
                    "paraphrase": q,
                    "kept": kept,
                    "dropped": dropped,
                    "relevant": sorted(qrels[qid]),
                    "in_set": kept >= a.min_words,
                    "split": "train",
                    # the seeded halves: fusion is fitted on "fit", reported on "held"
                    "half": "fit" if pos % 2 == 0 else "held",
                }
            )
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

        async def legs(text: str) -> dict[str, list[tuple[str, float]]]:
            (vec,) = await embedder.embed([text])
            async with rls_transaction(pool, who) as conn:
                dense = await dense_search(conn, who, vec, preds, limit=LIMIT)
            lex = await lexical.search(who, text, preds, limit=LIMIT, timeout_s=_TIMEOUT_S)
            stats = await lexical.term_stats(
                who,
                text,
                preds,
                top_chunk_id=lex[0].chunk_id if lex else None,
                timeout_s=_TIMEOUT_S,
            )
            return {
                "dense": [(h.chunk_id, h.similarity) for h in dense],
                "lexical": [(h.chunk_id, h.score) for h in lex],
                "terms": None
                if stats is None
                else {"chunks": stats.chunks, "df": stats.df, "top": sorted(stats.top)},
            }

        chunks = await lexical.chunk_count(who, timeout_s=_TIMEOUT_S)
        for c in cases:
            c["legs"] = {"claim": await legs(c["claim"])}
            if c.get("in_set"):
                c["legs"]["paraphrase"] = await legs(c["paraphrase"])
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
        return lambda legs: [h.key for h in score_fusion(legs, norm=norm)]

    def by_rank(legs: dict[str, list[tuple[str, float]]]) -> list[str]:
        return [h.key for h in rrf({k: [i for i, _ in v] for k, v in legs.items()})]

    def service(settings: RankingSettings) -> Any:
        def run(legs: dict[str, list[tuple[str, float]]]) -> list[str]:
            dense = [
                DenseHit(chunk_id=i, similarity=s, rank=r)
                for r, (i, s) in enumerate(legs["dense"], 1)
            ]
            lex = [
                LexicalHit(chunk_id=i, score=s, rank=r)
                for r, (i, s) in enumerate(legs["lexical"], 1)
            ]
            return [h.key for h in fuse(dense, lex, settings, chunks=chunks)]

        return run

    out: dict[str, Any] = {"rrf k60": by_rank}
    for norm in NORMS:
        out[f"score {norm}"] = by_norm(norm)
    out["service, defaults"] = service(RankingSettings())
    for none, full in EVIDENCE_RAMPS:
        ramp = RankingSettings(lexical_evidence_none=none, lexical_evidence_ramp=full - none)
        out[f"service, evidence ramp ({none}, {full})"] = service(ramp)
    return out


def groups(data: dict[str, Any]) -> dict[str, list[tuple[dict[str, Any], list[str]]]]:
    """(legs, relevant) per reported set: the paraphrase set's two seeded halves (fusion
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
        if c["in_set"] and "paraphrase" in c["legs"]:
            out[f"paraphrases, {half} half"].append((c["legs"]["paraphrase"], c["relevant"]))
            out["paraphrases, all"].append((c["legs"]["paraphrase"], c["relevant"]))
    return dict(out)


def report(data: dict[str, Any]) -> dict[str, Any]:
    doc_of = data["doc_of"]
    # the chunk count the service would read (older dumps: every chunk of the tenant)
    chunks = int(data.get("index_chunks") or len(doc_of))
    runs: dict[str, Any] = {
        "lexical": lambda legs: [i for i, _ in legs["lexical"]],
        "dense": lambda legs: [i for i, _ in legs["dense"]],
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
                r, n = _metrics(_docs_ranked(run(legs), doc_of), set(relevant))
                rs.append(r)
                ns.append(n)
            res[name] = {
                "recall@10": round(sum(rs) / len(rs), 4),
                "ndcg@10": round(sum(ns) / len(ns), 4),
                "n": len(rows),
            }
        table[which] = res
    return table


async def main(argv: list[str]) -> int:
    a = _args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "legs.json"
    if a.reuse:
        data = json.loads(path.read_text())
    else:
        data = await collect(a)
        path.write_text(json.dumps(data))
    table = report(data)
    (a.out / "report.json").write_text(json.dumps(table, indent=2))
    kept = [c for c in data["cases"] if c["in_set"]]
    print(
        f"SciFact train, {data['indexed_documents']} abstracts indexed; paraphrase set: "
        f"{len(kept)} of {len(data['cases'])} claims (seed {data['seed']}, >= "
        f"{data['min_words']} content words left)"
    )
    print(
        f"index chunks (the evidence unit's N): {data.get('index_chunks') or len(data['doc_of'])}"
    )
    for which, res in table.items():
        n = next(iter(res.values()))["n"]
        print(f"\n{which} ({n}):\n| run | recall@10 | nDCG@10 |\n|---|---|---|")
        for name, m in res.items():
            print(f"| {name} | {m['recall@10']:.3f} | {m['ndcg@10']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
