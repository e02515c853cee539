"""The answerability benchmark is built by construction: visibility by ACL (A sees a
query's evidence, B<g> never does), absent topics never ingested, derived unanswerable
shapes, and a fit / held-out split by source query that never mixes."""

from __future__ import annotations

import json
from pathlib import Path

from eval_helpers import case_result

from ragline.evaluation.answerability import (
    ALL_GROUP,
    SHAPES,
    held_out_summary,
    load_answerability,
    make_split,
    split_of,
)
from ragline.evaluation.summary import CaseResult

TOPICS = ["zebrafish", "telomerase", "ferroptosis", "microglia", "autophagy", "hepcidin"]


def _beir(tmp: Path, n_queries: int = 24) -> Path:
    d = tmp / "scifact"
    (d / "qrels").mkdir(parents=True)
    corpus, queries, qrels = [], [], ["query-id\tcorpus-id\tscore"]
    for q in range(n_queries):
        topic = TOPICS[q % len(TOPICS)]
        queries.append({"_id": str(q), "text": f"{topic} regulates pathway{q} in mice"})
        for k in range(1 + q % 2):
            doc = f"d{q}-{k}"
            corpus.append({"_id": doc, "title": f"{topic} {q}", "text": f"pathway{q} {topic} data"})
            qrels.append(f"{q}\t{doc}\t1")
    for j in range(40):
        corpus.append({"_id": f"x{j}", "title": "other", "text": f"unrelated text {j} 2019"})
    (d / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n")
    (d / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n")
    (d / "qrels" / "train.tsv").write_text("\n".join(qrels) + "\n")
    return d


def test_visibility_absent_topics_and_the_split(tmp_path: Path) -> None:
    d = _beir(tmp_path)
    split = make_split(d, absent_n=4, distractors_n=10)
    path = tmp_path / "split.json"
    path.write_text(json.dumps(split))
    ds = load_answerability(d, split_file=path)
    acl = {doc.document_id: set(doc.meta.acl_groups) for doc in ds.documents}
    assert all(ALL_GROUP in g for g in acl.values())
    assert len(ds.documents) == sum(1 + int(q) % 2 for q in split["kept"]) + 10
    for q in split["absent"]:  # never ingested
        assert f"scifact:d{q}-0" not in acl
    by_id = {c.case_id: c for c in ds.cases}
    for c in ds.cases:
        assert split_of(c.case_id) in {"fit", "heldout"} and c.category.split(":")[1] in SHAPES
        assert c.expect_abstain == (c.category.split(":")[1] != "visible")
        q = c.case_id.split(":")[2]
        half = split["kept"][q]["half"] if q in split["kept"] else split["absent"][q]
        assert split_of(c.case_id) == half  # every shape follows its source query's half
        if c.category.endswith(":visible"):
            hidden = by_id[c.case_id.replace(":visible:", ":hidden:")]
            docs = [m.document_id for g in c.required for m in g.any_of]
            assert docs and c.principal.groups == (ALL_GROUP,)
            # A sees every relevant document, B<g> none of them
            assert all(set(c.principal.groups) & acl[doc] for doc in docs)
            assert not any(set(hidden.principal.groups) & acl[doc] for doc in docs)
    shapes = {c.category.split(":")[1] for c in ds.cases}
    assert {"visible", "hidden", "absent_topic"} <= shapes
    assert make_split(d, absent_n=4, distractors_n=10) == split  # seeded: the same again


def _case(cid: str, expect: bool, abstained: bool, p: float | None) -> CaseResult:
    return case_result(
        cid,
        category=":".join(cid.split(":")[:2]),
        expect_abstain=expect,
        abstained=abstained,
        answerable_probability=p,
    )


def test_held_out_figures_ignore_the_fit_half() -> None:
    cases = [
        _case("heldout:visible:1", False, False, 0.9),
        _case("heldout:visible:2", False, True, 0.3),
        _case("heldout:hidden:1", True, True, 0.1),
        _case("heldout:near_miss:2", True, False, 0.6),
        _case("fit:hidden:3", True, False, 0.9),  # would change every figure if counted
    ]
    s = held_out_summary(cases)
    assert (s["cases"], s["unanswerable"], s["answerable"]) == (4, 2, 2)
    assert s["abstention_precision"] == 0.5 and s["abstention_recall"] == 0.5
    assert s["answerable_abstained"] == 1 and s["answerable_abstained_ids"] == ["heldout:visible:2"]
    # ECE: bins 0.1 (y 0), 0.3 (y 1), 0.6 (y 0), 0.9 (y 1): |0-.1|+|1-.3|+|0-.6|+|1-.9| over 4
    assert abs(s["ece"] - (0.1 + 0.7 + 0.6 + 0.1) / 4) < 1e-9
    assert s["recall_by_shape"]["hidden"] == 1.0 and s["recall_by_shape"]["near_miss"] == 0.0
