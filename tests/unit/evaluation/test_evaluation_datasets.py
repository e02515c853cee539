"""BEIR loader, dataset specs and snippet normalization."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragline.errors import ConfigError
from ragline.evaluation.datasets import (
    Matcher,
    beir_document_text,
    load_beir,
    load_dataset,
    match_text,
    read_qrels,
)
from ragline.hashing import content_hash


def write_beir(root: Path, *, header: bool = True) -> Path:
    (root / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "10", "title": "Aspirin and stroke", "text": "Aspirin lowers stroke risk."},
        {"_id": "11", "title": "", "text": "Untitled abstract."},
        {"_id": "12", "title": "Statins", "text": "Statins lower LDL."},
    ]
    queries = [
        {"_id": "q1", "text": "Does aspirin prevent stroke?"},
        {"_id": "q2", "text": "no judgments for this one"},
        {"_id": "q3", "text": "cholesterol drugs"},
        {"_id": "q4", "text": "only a zero judgment"},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n\n")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries))
    rows = ["q1\t10\t1", "q3\t12\t2", "q3\t11\t1", "q4\t10\t0"]
    (root / "qrels" / "test.tsv").write_text(
        ("query-id\tcorpus-id\tscore\n" if header else "") + "\n".join(rows) + "\n"
    )
    return root


def test_load_beir(tmp_path: Path) -> None:
    ds = load_beir(write_beir(tmp_path / "SciMini"), tenant="ev", groups=("eval", "all"))
    assert ds.kind == "beir" and ds.doc_level
    assert ds.name == "beir:SciMini:test"
    assert [d.document_id for d in ds.documents] == ["scimini:10", "scimini:11", "scimini:12"]
    d0 = ds.documents[0]
    assert d0.tenant == "ev"
    assert d0.meta.acl_groups == ("all", "eval")
    assert d0.meta.title == "Aspirin and stroke"
    assert d0.content_text == "# Aspirin and stroke\n\nAspirin lowers stroke risk.\n"
    assert d0.content_hash == content_hash(d0.content_text.encode())
    assert ds.documents[1].meta.title is None
    # only queries with a positive judgment become cases
    assert [c.case_id for c in ds.cases] == ["q1", "q3"]
    q3 = ds.cases[1]
    assert q3.expect_abstain is False
    assert [(g.any_of[0].document_id, g.grade) for g in q3.required] == [
        ("scimini:11", 1),
        ("scimini:12", 2),
    ]
    assert q3.principal.tenant == "ev"


def test_load_beir_limit_and_source(tmp_path: Path) -> None:
    ds = load_beir(write_beir(tmp_path / "x", header=False), source="sf", limit_queries=1)
    assert [c.case_id for c in ds.cases] == ["q1"]
    assert ds.cases[0].required[0].any_of[0].document_id == "sf:10"


def test_load_beir_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing"):
        load_beir(tmp_path)
    root = write_beir(tmp_path / "d")
    with pytest.raises(ConfigError, match="missing"):
        load_beir(root, split="dev")
    with pytest.raises(ConfigError, match="not a valid document-id prefix"):
        load_beir(root, source="Bad Source")
    (root / "qrels" / "bad.tsv").write_text("q1\t10\tnot-a-number\n")
    with pytest.raises(ConfigError, match="not a number"):
        load_beir(root, split="bad")
    (root / "corpus.jsonl").write_text('{"_id": "1"}\n{oops\n')
    with pytest.raises(ConfigError, match="not JSON"):
        load_beir(root)


def test_read_qrels_keeps_scores(tmp_path: Path) -> None:
    p = tmp_path / "q.tsv"
    p.write_text("query-id\tcorpus-id\tscore\n1\ta\t1\n1\tb\t2\n2\ta\t0\n")
    assert read_qrels(p) == {"1": {"a": 1, "b": 2}, "2": {"a": 0}}


def test_scifact_train_shape() -> None:
    root = Path(__file__).resolve().parents[4] / "shared" / "eval" / "scifact"
    if not root.is_dir():
        pytest.skip("SciFact not on this machine")
    ds = load_beir(root, split="train")
    assert len(ds.documents) == 5183
    assert len(ds.cases) == 809
    assert all(c.required for c in ds.cases)


def test_load_dataset_specs(tmp_path: Path) -> None:
    root = write_beir(tmp_path / "mini")
    assert load_dataset(f"beir:{root}").kind == "beir"
    golden = Path(__file__).resolve().parents[2] / "golden"
    assert load_dataset(f"golden:{golden}").kind == "golden"
    for bad in ("nothing", "beir:", "trec:/x"):
        with pytest.raises(ConfigError):
            load_dataset(bad)


def test_beir_document_text() -> None:
    assert beir_document_text(" T ", " body ") == "# T\n\nbody\n"
    assert beir_document_text("", "body") == "body\n"


def test_match_text_normalization() -> None:
    assert match_text("Full  JITTER\n draw") == "full jitter draw"
    assert match_text("`agwctl pin refresh` **now**") == "agwctl pin refresh now"
    assert match_text("92,000\u2013118,000 \u201cUSD\u201d") == '92,000-118,000 "usd"'
    assert match_text("a\u00a0b") == "a b"
    m = Matcher(document_id="d", snippet="Pin Refresh")
    assert m.matches("d", "run `agwctl pin refresh`")
    assert not m.matches("e", "run agwctl pin refresh")
    assert not m.matches("d", "run agwctl pin")
    assert Matcher(document_id="d").matches("d", "")
