"""An answerability benchmark built by construction from a labelled retrieval dataset
(BEIR SciFact train): hundreds of answerable and unanswerable cases, no hand labels.

``ragline eval --dataset answerability:<scifact dir>`` ingests it through the real
pipeline and asks every case over HTTP; ``held_out_summary`` gives the figures on the
held-out half only (the model in ``retrieval/answerability.py`` is fitted on the other).

**Corpus** (seeded, ``SEED``): every document judged relevant to a kept train query, plus
``DISTRACTORS`` documents relevant to no query. The documents of ``ABSENT`` further
queries (chosen among those sharing no relevant document with a kept one) are left out:
their topic is absent for everyone.

**Visibility by ACL** (the pipeline's own ACL, not a filter in the evaluator): the kept
queries are split into ``GROUPS`` groups. A document's ACL is ``ans-all`` plus every
``ans-g<i>`` except the groups having a query it is relevant to. Principal ``A``
(``ans-all``) sees the whole corpus; principal ``B<g>`` (``ans-g<g>``) sees it minus the
relevant documents of group ``g``'s queries.

**Cases** (``category`` = ``<fit|heldout>:<shape>``):

- ``visible``: a kept query as principal A: answerable (its relevant documents are judged);
- ``hidden``: the same query as principal ``B<g>`` of its group: unanswerable;
- ``absent_topic``: an ``ABSENT`` query as principal A: its documents were never ingested;
- ``missing_identifier``: a question about an identifier that exists nowhere (a seeded
  random trial / gene / accession id) on a kept query's topic, principal A;
- ``missing_date``: a kept query's claim asked of a year no document mentions, principal A;
- ``near_miss``: a kept query whose most specific word (rarest in the corpus) is swapped
  for the most specific word of an absent query (in no ingested document), principal A.

The fit / held-out split is by source query (every shape derived from a query follows
it), seeded, and written down in ``answerability_split.json`` beside this module
(``write_split`` regenerates it; the benchmark reads the file, so the split never moves).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragline.errors import ConfigError
from ragline.evaluation.datasets import (
    EvalCase,
    EvalDataset,
    Matcher,
    Principal,
    RequirementGroup,
    SourceDocument,
    _jsonl,
    beir_document_text,
    read_qrels,
)
from ragline.events import Classification, DocumentMeta

__all__ = [
    "ABSENT",
    "DISTRACTORS",
    "GROUPS",
    "SEED",
    "SHAPES",
    "SPLIT_FILE",
    "load_answerability",
    "make_split",
    "split_of",
    "write_split",
]

SEED = 20261206
GROUPS = 8
DISTRACTORS = 1200
ABSENT = 120
TENANT = "answerability"
SOURCE = "scifact"
ALL_GROUP = "ans-all"
SPLIT_FILE = Path(__file__).with_name("answerability_split.json")
SHAPES: tuple[str, ...] = (
    "visible",
    "hidden",
    "absent_topic",
    "missing_identifier",
    "missing_date",
    "near_miss",
)
_WORD = re.compile(r"[a-z0-9][a-z0-9-]*[a-z0-9]|[a-z0-9]")
_STOP = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "to",
        "was",
        "were",
        "with",
        "not",
        "does",
        "do",
        "than",
        "more",
        "less",
        "increase",
        "increases",
        "decreased",
        "decreases",
        "reduced",
        "reduces",
        "associated",
        "patients",
        "treatment",
        "risk",
        "cells",
        "cell",
    )
)


def _group(i: int) -> str:
    return f"ans-g{i}"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def make_split(
    directory: Path, *, absent_n: int = ABSENT, distractors_n: int = DISTRACTORS
) -> dict[str, Any]:
    """The fixed choices: kept / absent queries, their group and half, distractors."""
    qrels = read_qrels(directory / "qrels" / "train.tsv")
    positive = {q: sorted(d for d, s in r.items() if s > 0) for q, r in qrels.items()}
    queries = sorted((q for q, docs in positive.items() if docs), key=int)
    rng = random.Random(SEED)
    order = queries[:]
    rng.shuffle(order)
    users: Counter[str] = Counter(d for q in queries for d in positive[q])
    absent: list[str] = []
    for q in order:  # a query whose documents no other query needs
        if len(absent) < absent_n and all(users[d] == 1 for d in positive[q]):
            absent.append(q)
    kept = [q for q in order if q not in set(absent)]
    relevant = {d for q in queries for d in positive[q]}
    corpus = sorted(str(r["_id"]) for r in _jsonl(directory / "corpus.jsonl"))
    pool = [d for d in corpus if d not in relevant]
    distractors = sorted(rng.sample(pool, min(distractors_n, len(pool))))
    half = {q: ("fit" if i % 2 == 0 else "heldout") for i, q in enumerate(order)}
    return {
        "seed": SEED,
        "groups": GROUPS,
        "source": "BEIR SciFact train (qrels/train.tsv)",
        "kept": {q: {"group": i % GROUPS, "half": half[q]} for i, q in enumerate(kept)},
        "absent": {q: half[q] for q in absent},
        "distractors": distractors,
    }


def write_split(directory: Path, path: Path = SPLIT_FILE) -> Path:
    path.write_text(json.dumps(make_split(directory), indent=1, sort_keys=True) + "\n")
    return path


def split_of(case_id: str) -> str:
    """``fit`` or ``heldout`` from a case id (``<half>:<shape>:<query id>``)."""
    return case_id.partition(":")[0]


def _fake_identifier(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return f"NCT{rng.randrange(10**7, 10**8)}"
    if kind == 1:
        return f"rs{rng.randrange(10**8, 10**9)}"
    if kind == 2:
        letters = "".join(rng.choice("BCDFGHJKLMNPQRSTVWXZ") for _ in range(3))
        return f"{letters}{rng.randrange(10, 99)}"
    return f"GSE{rng.randrange(300000, 999999)}"


def _topic(words: Sequence[str], df: Mapping[str, int], n: int = 3) -> str:
    """The query's ``n`` most specific content words (rarest in the corpus, df >= 1)."""
    cands = [w for w in dict.fromkeys(words) if w not in _STOP and len(w) > 3 and df.get(w, 0)]
    cands.sort(key=lambda w: (df[w], w))
    return " ".join(cands[:n])


def load_answerability(directory: Path, *, split_file: Path = SPLIT_FILE) -> EvalDataset:
    directory = Path(directory)
    for p in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv"):
        if not (directory / p).is_file():
            raise ConfigError(f"answerability: {directory / p} is missing (BEIR SciFact)")
    if not split_file.is_file():
        raise ConfigError(f"answerability: the fixed split {split_file} is missing")
    split = json.loads(split_file.read_text())
    kept: dict[str, dict[str, Any]] = split["kept"]
    absent: dict[str, str] = split["absent"]
    qrels = read_qrels(directory / "qrels" / "train.tsv")
    positive = {q: sorted(d for d, s in r.items() if s > 0) for q, r in qrels.items()}
    texts = {str(r["_id"]): str(r["text"]) for r in _jsonl(directory / "queries.jsonl")}
    hidden_from: dict[str, set[int]] = {}
    for q, info in kept.items():
        for d in positive[q]:
            hidden_from.setdefault(d, set()).add(int(info["group"]))
    wanted = set(hidden_from) | set(split["distractors"])
    documents: list[SourceDocument] = []
    df: Counter[str] = Counter()
    for row in _jsonl(directory / "corpus.jsonl"):
        d = str(row["_id"])
        if d not in wanted:
            continue
        text = beir_document_text(row.get("title") or "", row.get("text") or "")
        df.update(set(_words(text)))
        hidden = hidden_from.get(d, set())
        groups = (ALL_GROUP, *(_group(g) for g in range(int(split["groups"])) if g not in hidden))
        documents.append(
            SourceDocument(
                tenant=TENANT,
                document_id=f"{SOURCE}:{d}",
                meta=DocumentMeta(
                    title=(row.get("title") or None),
                    source_type="beir",
                    mime_type="text/markdown",
                    acl_groups=groups,
                    classification=Classification.INTERNAL,
                ),
                content_text=text,
            )
        )
    a = Principal(subject="ans-a", tenant=TENANT, groups=(ALL_GROUP,))
    cases: list[EvalCase] = []

    def add(half: str, shape: str, q: str, question: str, who: Principal, **kw: Any) -> None:
        cases.append(
            EvalCase(
                case_id=f"{half}:{shape}:{q}",
                question=question,
                principal=who,
                category=f"{half}:{shape}",
                expect_abstain=shape != "visible",
                **kw,
            )
        )

    absent_words = {
        q: [w for w in _words(texts[q]) if w not in _STOP and len(w) > 4 and df.get(w, 0) == 0]
        for q in sorted(absent, key=int)
    }
    donors = [w[0] for w in absent_words.values() if w]
    for q in sorted(absent, key=int):
        add(absent[q], "absent_topic", q, texts[q], a)
    for q in sorted(kept, key=int):
        info, text = kept[q], texts[q]
        half, g = str(info["half"]), int(info["group"])
        rng = random.Random(f"{SEED}:{q}")
        required = tuple(
            RequirementGroup(any_of=(Matcher(document_id=f"{SOURCE}:{d}"),)) for d in positive[q]
        )
        add(half, "visible", q, text, a, required=required)
        b = Principal(subject=f"ans-b{g}", tenant=TENANT, groups=(_group(g),))
        add(half, "hidden", q, text, b)
        # the derived shapes: every query gets one of them (seeded), so each is ~1/3
        words = _words(text)
        shape = ("missing_identifier", "missing_date", "near_miss")[_bucket(q) % 3]
        if shape == "missing_identifier":
            topic = _topic(words, df) or text
            ident = _fake_identifier(rng)
            add(half, shape, q, f"What did {ident} show about {topic}?", a)
        elif shape == "missing_date":
            year = rng.choice([y for y in range(2031, 2046) if not df.get(str(y), 0)])
            add(half, shape, q, f"What did the {year} update report on this: {text}", a)
        else:
            target = _topic(words, df, n=1)
            if not target or not donors:
                continue
            donor = donors[_bucket(q) % len(donors)]
            swapped = re.sub(rf"\b{re.escape(target)}\b", donor, text, count=1, flags=re.I)
            if swapped != text:
                add(half, shape, q, swapped, a)
    return EvalDataset(
        name=f"answerability:{directory.name}",
        kind="answerability",
        documents=tuple(documents),
        cases=tuple(cases),
        # requests as a default client sends them (no max_per_document override): the
        # model is fitted on the signals production searches see
        doc_level=False,
    )


def _bucket(q: str) -> int:
    return int(hashlib.sha256(f"{SEED}:{q}".encode()).hexdigest()[:8], 16)


def shape_of(category: str) -> str:
    return category.partition(":")[2]


def halves(case_ids: Iterable[str]) -> Counter[str]:
    return Counter(split_of(c) for c in case_ids)


# ------------------------------------------------------------------ out-of-sample figures


def reliability(
    probs: Sequence[float], labels: Sequence[bool], bins: int = 10
) -> list[dict[str, float]]:
    """Equal-width bins of the predicted probability: per non-empty bin its count, mean
    prediction and observed share of positives (the reliability curve)."""
    rows: list[dict[str, float]] = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [
            (p, y)
            for p, y in zip(probs, labels, strict=True)
            if lo <= p < hi or (b == bins - 1 and p == 1.0)
        ]
        if inside:
            rows.append(
                {
                    "lo": lo,
                    "hi": hi,
                    "n": float(len(inside)),
                    "mean_p": sum(p for p, _ in inside) / len(inside),
                    "observed": sum(1 for _, y in inside if y) / len(inside),
                }
            )
    return rows


def ece(probs: Sequence[float], labels: Sequence[bool], bins: int = 10) -> float | None:
    """Expected calibration error: the count-weighted mean |observed - predicted| gap."""
    n = len(probs)
    if not n:
        return None
    return (
        sum(r["n"] * abs(r["observed"] - r["mean_p"]) for r in reliability(probs, labels, bins)) / n
    )


def held_out_summary(cases: Iterable[Any], *, half: str = "heldout") -> dict[str, Any]:
    """Abstention on one half of the benchmark (``CaseResult``s of one mode): precision,
    recall, answerable cases abstained, calibration of ``answerable_probability`` (the
    positive class is "answerable"), recall per unanswerable shape."""
    mine = [
        c
        for c in cases
        if split_of(c.case_id) == half and c.expect_abstain is not None and c.error is None
    ]
    abst = [c for c in mine if c.abstained]
    expected = [c for c in mine if c.expect_abstain]
    answerable = [c for c in mine if not c.expect_abstain]
    tp = sum(1 for c in abst if c.expect_abstain)
    wrong = [c.case_id for c in answerable if c.abstained]
    scored = [c for c in mine if c.answerable_probability is not None]
    probs = [float(c.answerable_probability) for c in scored]
    labels = [not c.expect_abstain for c in scored]
    per_shape: dict[str, float | None] = {}
    for shape in SHAPES[1:]:
        of = [c for c in expected if shape_of(c.category) == shape]
        per_shape[shape] = sum(1 for c in of if c.abstained) / len(of) if of else None
    return {
        "half": half,
        "cases": len(mine),
        "unanswerable": len(expected),
        "answerable": len(answerable),
        "abstention_precision": tp / len(abst) if abst else None,
        "abstention_recall": tp / len(expected) if expected else None,
        "answerable_abstained": len(wrong),
        "answerable_abstained_rate": len(wrong) / len(answerable) if answerable else None,
        "answerable_abstained_ids": wrong,
        "ece": ece(probs, labels),
        "scored": len(scored),
        "reliability": reliability(probs, labels),
        "recall_by_shape": per_shape,
    }


def render_held_out(s: Mapping[str, Any]) -> str:
    def f(v: Any) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    note = "; never the half the model was fitted on" if s["half"] == "heldout" else ""
    lines = [
        f"answerability ({s['half']} half, {s['cases']} cases: {s['unanswerable']} "
        f"unanswerable, {s['answerable']} answerable{note})",
        f"  abstention precision {f(s['abstention_precision'])}  recall "
        f"{f(s['abstention_recall'])}  ECE {f(s['ece'])} ({s['scored']} scored)",
        f"  answerable abstained: {s['answerable_abstained']} of {s['answerable']} "
        f"({f(s['answerable_abstained_rate'])})",
        "  recall by shape: " + ", ".join(f"{k} {f(v)}" for k, v in s["recall_by_shape"].items()),
    ]
    return "\n".join(lines)
