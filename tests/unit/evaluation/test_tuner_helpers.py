"""bench/tune.py's shared helpers (bench/_tune.py): the fixed train / held-out split every
fit chooses on, and the document-level nDCG@10 every table reports."""

from __future__ import annotations

import math
from types import ModuleType

import pytest
from eval_helpers import bench_module


@pytest.fixture(scope="module")
def tune() -> ModuleType:
    return bench_module("_tune")


def test_the_split_is_the_one_every_recorded_fit_used(tune: ModuleType) -> None:
    # SciFact claim ids on each side as docs/evaluation.md's tables split them (436 / 373):
    # a changed split would silently make old and new held-out numbers incomparable
    assert [k for k in ("2", "3", "36", "173", "1098") if not tune.in_train(k)] == []
    assert [k for k in ("0", "1", "13") if tune.in_train(k)] == []
    keys = [str(i) for i in range(1000)]
    train, held = tune.split(keys)
    assert sorted(train + held, key=int) == keys and not set(train) & set(held)
    assert train == [k for k in keys if k in set(train)]  # order kept
    assert 450 < len(train) < 550


def test_ndcg_counts_a_document_once_at_its_first_chunk(tune: ModuleType) -> None:
    rel = {"a": 1, "b": 1}
    assert tune.ndcg10(["a", "a", "b"], rel) == pytest.approx(1.0)
    # b's second chunk does not push the relevant c out of the top 10 documents
    ranked = ["b", *[f"x{i}" for i in range(8)], "b", "c"]
    ideal = 1 + 1 / math.log2(3)
    assert tune.ndcg10(ranked, {"b": 1, "c": 1}) == pytest.approx((1 + 1 / math.log2(11)) / ideal)
    assert tune.ndcg10(["x", "a"], {"a": 2}) == pytest.approx(1 / math.log2(3))
    assert tune.ndcg10([], {"a": 1}) == 0.0
    assert tune.ndcg10(["a"], {}) == 0.0


def test_documents_rank_where_their_first_chunk_does(tune: ModuleType) -> None:
    fused = [("a1", 3.0), ("b1", 2.9), ("b2", 2.8), ("a2", 0.1), ("c1", 1.0)]
    doc_of = {"a1": "A", "a2": "A", "b1": "B", "b2": "B", "c1": "C"}
    assert tune.doc_order(fused, doc_of) == ["A", "B", "B", "A", "C"]
    # best chunk + 0.5 x the others: B (2.9 + 1.4) passes A (3.0 + 0.05)
    assert tune.doc_order(fused, doc_of, 0.5) == ["B", "A", "C"]


def test_summary_means_each_half_and_sorts_by_the_training_half(tune: ModuleType) -> None:
    keys = ["2", "3", "0", "1"]  # train, train, held-out, held-out
    per = {
        "v1": {"2": 0.0, "3": 0.2, "0": 1.0, "1": 1.0},
        "v2": {"2": 1.0, "3": 0.6, "0": 0, "1": 0},
    }
    rows = tune.summary(per, keys)
    assert [r["variant"] for r in rows] == ["v2", "v1"]
    assert rows[0]["train"] == pytest.approx(0.8) and rows[0]["held_out"] == 0.0
    assert rows[1]["all"] == pytest.approx(0.55)
