"""Passage-level answerability signals, measured offline (issue 32).

``collect``: asks every case of the answerability benchmark once through a kept stack
(bench/answerability_stack.py's ``platform.json``), hybrid, top 10, with the lowest
answerable threshold (so the model abstains on nothing the rules answer and the results
come back), and caches per case: the label, the rules' decision, the service's features
and the results' texts and scores (``OUT/cases.jsonl``). One run; everything after it is
offline.

``analyze``: computes candidate passage-level features from the cache with the deployed
embedder in-process (the same model the query service loads) and prints each feature's
AUC (answerable vs not) on the **fit half only**, plus the per-search cost of the
sentence embedding step (p50/p95 over the cases).

    .venv/bin/python bench/answerability_features.py collect --stack bench/out/answerability
    .venv/bin/python bench/answerability_features.py analyze
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "answerability" / "passage"


async def _collect(stack: Path, out: Path, concurrency: int) -> int:
    from _paths import scifact

    from ragline.evaluation.client import QueryClient
    from ragline.evaluation.datasets import load_dataset
    from ragline.evaluation.settings import EvalSettings

    plat = json.loads((stack / "platform.json").read_text())
    es = EvalSettings(query_url=plat["query_url"], jwt_secret=plat["jwt_secret"])
    ds = load_dataset(f"answerability:{scifact()}")
    out.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (once)
    sem = asyncio.Semaphore(concurrency)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    async with QueryClient(es) as client:

        async def one(case: Any) -> None:
            async with sem:
                resp, ms = await client.search(
                    case.principal,
                    case.question,
                    mode="hybrid",
                    rerank=False,
                    top_k=10,
                    extra={"answerable_threshold": 0.01},
                )
            ev = resp.evidence
            rows.append(
                {
                    "case_id": case.case_id,
                    "question": case.question,
                    "expect_abstain": case.expect_abstain,
                    "abstained": resp.abstained,
                    "reason": resp.abstain_reason,
                    "p": ev.answerable_probability if ev else None,
                    "features": ev.features if ev else None,
                    "ms": ms,
                    "results": [
                        {
                            "doc": r.document_id,
                            "text": r.text,
                            "sim": r.scores.dense_score,
                            "bm25": r.scores.bm25_score,
                            "dense_rank": r.scores.dense_rank,
                            "bm25_rank": r.scores.bm25_rank,
                        }
                        for r in resp.results
                    ],
                }
            )
            if len(rows) % 200 == 0:
                print(f"  {len(rows)} cases, {time.perf_counter() - t0:.0f} s", flush=True)

        await asyncio.gather(*(one(c) for c in ds.cases))
    rows.sort(key=lambda r: r["case_id"])
    with (out / "cases.jsonl").open("w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"{len(rows)} cases cached in {out / 'cases.jsonl'} ({time.perf_counter() - t0:.0f} s)")
    return 0


def auc(x: np.ndarray, y: np.ndarray) -> float:
    """Mann-Whitney AUC of ``x`` for ``y == 1`` (ties count half); NaN rows left out."""
    ok = np.isfinite(x)
    x, y = x[ok], y[ok]
    pos, neg = x[y == 1], x[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    allv = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(allv))
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1] == allv[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    r = np.empty(len(allv))
    r[order] = ranks
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _analyze(out: Path) -> int:
    from ragline.config import EmbeddingModelSettings
    from ragline.embedding.model import load_embedder
    from ragline.retrieval.answerability import passage_features, sentences

    rows = [json.loads(line) for line in (out / "cases.jsonl").open()]
    emb = load_embedder(EmbeddingModelSettings(), threads=1)
    cache: dict[str, np.ndarray] = {}

    def encode(texts: list[str]) -> list[np.ndarray]:
        miss = [t for t in dict.fromkeys(texts) if t not in cache]
        if miss:
            for t, v in zip(miss, emb.encode(miss), strict=True):
                cache[t] = np.asarray(v, dtype=np.float32)
        return [cache[t] for t in texts]

    feats: list[dict[str, float | None]] = []
    costs: list[float] = []
    for r in rows:
        res = r["results"]
        texts = [x["text"] for x in res]
        q = encode([r["question"]])[0]
        sents = [s for t in texts[:3] for s in sentences(t)]
        before = len(cache)
        t0 = time.perf_counter()
        vecs = encode(sents) if sents else []
        dt = (time.perf_counter() - t0) * 1000
        if len(cache) > before:
            costs.append(dt)
        f = passage_features(
            r["question"],
            texts,
            [x["sim"] for x in res],
            sentence_sims=[float(v @ q) for v in vecs],
        )
        feats.append({**(r["features"] or {}), **f})
    y = np.array([0.0 if r["expect_abstain"] else 1.0 for r in rows])
    fit = np.array([r["case_id"].startswith("fit:") for r in rows])
    ruled = np.array([bool(r["abstained"]) for r in rows])
    names = sorted({k for f in feats for k in f})
    print(f"{len(rows)} cases; fit half {int(fit.sum())} (AUC on the fit half only)")
    print(f"{'feature':24s} {'AUC fit':>8s} {'AUC fit, rules answered':>24s} {'n':>5s}")
    table = {}
    for n in names:
        x = np.array([np.nan if (v := f.get(n)) is None else float(v) for f in feats])
        a = auc(x[fit], y[fit])
        b = auc(x[fit & ~ruled], y[fit & ~ruled])
        table[n] = {"auc_fit": a, "auc_fit_rules_answered": b}
        print(f"{n:24s} {a:8.3f} {b:24.3f} {int(np.isfinite(x[fit]).sum()):5d}")
    if costs:
        c = np.array(costs)
        print(
            f"sentence embedding per search (cold, {len(c)} searches): p50 "
            f"{np.percentile(c, 50):.1f} ms, p95 {np.percentile(c, 95):.1f} ms"
        )
    (out / "features.jsonl").write_text(
        "".join(
            json.dumps({"case_id": r["case_id"], "features": f}) + "\n"
            for r, f in zip(rows, feats, strict=True)
        )
    )
    (out / "auc.json").write_text(json.dumps(table, indent=1) + "\n")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--stack", type=Path, default=ROOT / "bench" / "out" / "answerability")
    c.add_argument("--concurrency", type=int, default=2)
    c.add_argument("--out", type=Path, default=OUT)
    a = sub.add_parser("analyze")
    a.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    if args.cmd == "collect":
        return asyncio.run(_collect(args.stack, args.out, args.concurrency))
    return _analyze(args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
