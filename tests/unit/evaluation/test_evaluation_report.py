"""Report building, JSON round trip, tables and the PNG plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.errors import ConfigError
from ragline.evaluation.datasets import EvalDataset
from ragline.evaluation.plot import plot_report
from ragline.evaluation.report import (
    build_report,
    case_failures,
    load_report,
    render_categories,
    render_table,
    save_report,
)
from ragline.evaluation.summary import CaseRun


def test_build_report_side_by_side(tiny: EvalDataset, runs: dict[str, list[CaseRun]]) -> None:
    r = build_report(tiny, runs, top_k=100, concurrency=2)
    assert r.meta.modes == ["good", "leaky"]
    assert r.meta.n_cases == 2 and r.meta.n_documents == 3
    assert r.meta.host["cores"]
    good, leaky = r.modes["good"].overall, r.modes["leaky"].overall
    # retrieval metrics average over the one case with required evidence
    assert good["recall@1"] == 1.0 and leaky["recall@1"] == 0.0
    assert good["mrr"] == 1.0 and leaky["mrr"] == 0.5
    assert good["precision@1"] == 1.0
    # abstention: good abstained where expected; leaky never abstained
    assert (good["abstention_precision"], good["abstention_recall"]) == (1.0, 1.0)
    assert (leaky["abstention_precision"], leaky["abstention_recall"]) == (None, 0.0)
    # forbidden: rate over cases that declare forbidden content
    assert good["forbidden_hits"] == 0 and good["forbidden_hit_rate"] == 0.0
    assert leaky["forbidden_hits"] == 1 and leaky["forbidden_hit_rate"] == 1.0
    assert good["latency_p50_ms"] == 15.0
    assert leaky["cache_hit_rate"] == 0.5
    assert good["error_rate"] == 0.0
    assert good["rerank_applied_rate"] is None
    # per category
    assert r.value("good", "recall@10", "fact") == 1.0
    assert r.value("leaky", "forbidden_hits", "permission") == 1
    assert r.value("good", "recall@10", "permission") is None
    assert r.value("nope", "recall@10") is None
    # per case: ids and numbers, never the text
    leak = next(c for c in r.cases if c.mode == "leaky" and c.case_id == "p1")
    assert leak.forbidden_documents == ["w:secret"]
    assert "text of" not in r.model_dump_json()
    assert case_failures(r) == [
        {"case": "p1", "mode": "leaky", "forbidden": ["w:secret"], "unflagged": [], "error": None}
    ]


def test_small_top_k_is_noted(tiny: EvalDataset, runs: dict[str, list[CaseRun]]) -> None:
    r = build_report(tiny, runs, top_k=50, concurrency=1, notes=["hello"])
    assert r.meta.notes == ["hello", "top_k=50 < 100: recall@100 is recall@50"]


def test_errors_count_as_misses(tiny: EvalDataset) -> None:
    runs = {
        "m": [
            CaseRun(case_id="f1", mode="m", error="BackendUnavailable: down"),
            CaseRun(case_id="p1", mode="m", abstained=True, latency_ms=5.0),
        ]
    }
    r = build_report(tiny, runs, top_k=100, concurrency=1)
    assert r.value("m", "error_rate") == 0.5
    assert r.value("m", "recall@10") == 0.0
    assert r.value("m", "latency_p50_ms") == 5.0


def test_abstained_answer_is_judged_as_empty(tiny: EvalDataset) -> None:
    runs = {"m": [CaseRun(case_id="f1", mode="m", abstained=True, hits=[])]}
    r = build_report(tiny, runs, top_k=100, concurrency=1)
    assert r.value("m", "recall@10") == 0.0
    assert r.value("m", "abstention_precision") == 0.0


def test_json_round_trip_and_tables(
    tmp_path: Path, tiny: EvalDataset, runs: dict[str, list[CaseRun]]
) -> None:
    r = build_report(tiny, runs, top_k=100, concurrency=2)
    path = save_report(r, tmp_path / "out" / "report.json")
    again = load_report(path)
    assert again == r
    table = render_table(r)
    lines = table.splitlines()
    assert lines[0].split() == ["metric", "good", "leaky"]
    row = next(line for line in lines if line.startswith("mrr"))
    assert row.split() == ["mrr", "1.000", "0.500"]
    assert next(line for line in lines if line.startswith("forbidden_hits ")).split()[1:] == [
        "0",
        "1",
    ]
    assert "n/a" in next(line for line in lines if line.startswith("abstention_precision"))
    cats = render_categories(r, "recall@10").splitlines()
    assert cats[0].split()[:2] == ["category", "(recall@10)"]
    assert cats[2].split() == ["fact", "1", "1.000", "1.000"]
    assert cats[3].split() == ["permission", "1", "n/a", "n/a"]


def test_load_report_rejects_other_json(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}')
    with pytest.raises(ConfigError, match="not an evaluation report"):
        load_report(p)
    with pytest.raises(ConfigError):
        load_report(tmp_path / "missing.json")


def test_plot_is_written(tmp_path: Path, tiny: EvalDataset, runs: dict[str, list[CaseRun]]) -> None:
    r = build_report(tiny, runs, top_k=100, concurrency=2)
    out = plot_report(r, tmp_path / "plots" / "report.png", baseline=r)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000


def test_server_stage_timings(tiny: EvalDataset) -> None:
    runs = {
        "m": [
            CaseRun(
                case_id="f1",
                mode="m",
                latency_ms=30.0,
                server_ms=20.0,
                timings_ms={"embed": 8.0, "dense": 4.0, "total": 20.0},
            ),
            CaseRun(
                case_id="p1",
                mode="m",
                abstained=True,
                latency_ms=10.0,
                server_ms=6.0,
                timings_ms={"embed": 2.0, "total": 6.0},
                degraded=("rerank_unavailable",),
            ),
        ]
    }
    r = build_report(tiny, runs, top_k=100, concurrency=1)
    assert r.value("m", "server_p50_ms") == 13.0
    assert r.value("m", "server_embed_p50_ms") == 5.0
    assert r.value("m", "server_dense_p50_ms") == 4.0
    assert r.value("m", "server_total_p50_ms") is None
    assert r.value("m", "degraded_rate") == 0.5
