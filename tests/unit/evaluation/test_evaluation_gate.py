"""Thresholds, baseline comparison and the exit codes of ``ragline eval``."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.cli import main as ragline_main
from ragline.evaluation.datasets import EvalDataset
from ragline.evaluation.gate import (
    Threshold,
    ThresholdConfig,
    check_thresholds,
    compare,
    load_thresholds,
    render_changes,
    render_violations,
)
from ragline.evaluation.metrics import Hit
from ragline.evaluation.report import Report, build_report, save_report
from ragline.evaluation.summary import CaseRun


def hit(doc: str) -> Hit:
    return Hit(document_id=doc, text=f"text of {doc}")


@pytest.fixture
def report(tiny: EvalDataset, runs: dict[str, list[CaseRun]]) -> Report:
    return build_report(tiny, runs, top_k=100, concurrency=2)


def _with(report: Report, mode: str, **values: float | None) -> Report:
    """A copy of ``report`` with some overall metrics of ``mode`` replaced."""
    data = report.model_dump()
    data["modes"][mode]["overall"].update(values)
    return Report.model_validate(data)


def cfg(*ts: Threshold, tolerance: float = 0.01) -> ThresholdConfig:
    return ThresholdConfig(thresholds=ts, tolerance=tolerance)


def test_min_max_and_wildcards(report: Report) -> None:
    v = check_thresholds(report, cfg(Threshold(metric="forbidden_hits", max=0)))
    assert [(x.mode, x.scope, x.metric, x.value) for x in v] == [
        ("leaky", "overall", "forbidden_hits", 1.0)
    ]
    v = check_thresholds(report, cfg(Threshold(metric="recall@1", mode="good", min=0.9)))
    assert v == []
    v = check_thresholds(report, cfg(Threshold(metric="mrr", min=0.75)))
    assert [x.mode for x in v] == ["leaky"]
    assert v[0].bound == "min 0.750"
    # a named mode the report lacks is skipped
    assert check_thresholds(report, cfg(Threshold(metric="mrr", mode="dense", min=1))) == []


def test_category_scopes(report: Report) -> None:
    t = Threshold(metric="forbidden_hits", category="*", max=0)
    v = check_thresholds(report, cfg(t))
    assert [(x.mode, x.scope) for x in v] == [("leaky", "permission")]
    t = Threshold(metric="recall@10", category="fact", mode="good", min=1.0)
    assert check_thresholds(report, cfg(t)) == []


def test_missing_metric_fails_unless_allowed(report: Report) -> None:
    t = Threshold(metric="abstention_precision", mode="leaky", min=0.5)
    v = check_thresholds(report, cfg(t))
    assert len(v) == 1 and v[0].value is None and "missing" in v[0].bound
    t = Threshold(metric="abstention_precision", mode="leaky", min=0.5, allow_missing=True)
    assert check_thresholds(report, cfg(t)) == []


def test_max_drop_against_baseline(report: Report) -> None:
    base = _with(report, "good", **{"ndcg@10": 0.95, "latency_p95_ms": 10.0})
    t = Threshold(metric="ndcg@10", mode="good", max_drop=0.03)
    cur = _with(report, "good", **{"ndcg@10": 0.93})
    assert check_thresholds(cur, cfg(t), base) == []
    cur = _with(report, "good", **{"ndcg@10": 0.90})
    (v,) = check_thresholds(cur, cfg(t), base)
    assert "baseline 0.950" in v.bound
    # without a baseline, max_drop cannot be checked and does not fail
    assert check_thresholds(cur, cfg(t)) == []
    # lower-is-better metrics drop when they grow
    t = Threshold(metric="latency_p95_ms", mode="good", max_drop=5)
    assert check_thresholds(_with(report, "good", latency_p95_ms=14.0), cfg(t), base) == []
    assert len(check_thresholds(_with(report, "good", latency_p95_ms=16.0), cfg(t), base)) == 1


def test_server_stage_timings_lower_is_better(report: Report) -> None:
    """Every ``*_ms`` metric is a time: the query service's per-stage p50s
    (``server_<stage>_p50_ms``) getting faster is an improvement, never a regression, and a
    ``max_drop`` on one bounds how much slower it may get (a golden run whose server p50
    halved was listed under regressions before)."""
    base = _with(report, "good", server_p50_ms=200.0, server_lexical_p50_ms=20.0)
    cur = _with(report, "good", server_p50_ms=100.0, server_lexical_p50_ms=40.0)
    changes = {c.metric: c.kind for c in compare(cur, base, cfg())}
    assert changes == {"server_p50_ms": "improvement", "server_lexical_p50_ms": "regression"}
    t = Threshold(metric="server_lexical_p50_ms", mode="good", max_drop=5)
    assert check_thresholds(base, cfg(t), cur) == []  # 40 -> 20 ms
    assert len(check_thresholds(cur, cfg(t), base)) == 1  # 20 -> 40 ms


def test_threshold_needs_a_bound() -> None:
    with pytest.raises(ValueError, match="min, max or max_drop"):
        Threshold(metric="mrr")


def test_compare_directions(report: Report) -> None:
    base = report
    cur = _with(
        report,
        "good",
        **{"recall@10": 0.5, "mrr": 1.0, "latency_p50_ms": 30.0, "forbidden_hits": 0.0},
    )
    cur = _with(cur, "leaky", **{"forbidden_hits": 0.0, "ndcg@10": 0.9, "latency_p50_ms": 41.0})
    changes = {(c.mode, c.scope, c.metric): c.kind for c in compare(cur, base, cfg())}
    assert changes[("good", "overall", "recall@10")] == "regression"
    assert changes[("good", "overall", "latency_p50_ms")] == "regression"  # 15 -> 30 ms
    assert changes[("leaky", "overall", "forbidden_hits")] == "improvement"
    assert changes[("leaky", "overall", "ndcg@10")] == "improvement"
    # 40 -> 41 ms is inside the 10 % latency tolerance; mrr unchanged
    assert ("leaky", "overall", "latency_p50_ms") not in changes
    assert ("good", "overall", "mrr") not in changes
    text = render_changes(compare(cur, base, cfg()))
    assert "regressions: 2" in text and "recall@10" in text and "1.000 -> 0.500" in text
    assert render_changes([]) == "no significant change against the baseline"


def test_compare_per_category(tiny: EvalDataset) -> None:
    base_runs = {"m": [CaseRun(case_id="f1", mode="m", hits=[hit("w:a")])]}
    cur_runs = {"m": [CaseRun(case_id="f1", mode="m", hits=[hit("w:b")])]}
    base = build_report(tiny, base_runs, top_k=100, concurrency=1)
    cur = build_report(tiny, cur_runs, top_k=100, concurrency=1)
    regress = {(c.scope, c.metric) for c in compare(cur, base, cfg()) if c.kind == "regression"}
    assert ("fact", "recall@1") in regress and ("overall", "recall@1") in regress


def test_load_thresholds(tmp_path: Path) -> None:
    p = tmp_path / "t.yaml"
    p.write_text("version: 1\ntolerance: 0.02\nthresholds:\n  - {metric: mrr, min: 0.5}\n")
    c = load_thresholds(p)
    assert c.tolerance == 0.02 and c.thresholds[0].mode == "*"
    p.write_text("version: 1\nthresholds:\n  - {metric: mrr, minimum: 0.5}\n")
    from ragline.errors import ConfigError

    with pytest.raises(ConfigError):
        load_thresholds(p)
    golden = load_thresholds(Path(__file__).resolve().parents[2] / "golden" / "thresholds.yaml")
    assert any(t.metric == "forbidden_hits" and t.max == 0 for t in golden.thresholds)


def test_render_violations(report: Report) -> None:
    v = check_thresholds(report, cfg(Threshold(metric="forbidden_hits", max=0)))
    assert render_violations(v).startswith("gate: FAIL (1 threshold(s) broken)")
    assert render_violations([]).startswith("gate: PASS")


# ------------------------------------------------------------------ the CLI's exit codes


def _files(tmp_path: Path, report: Report) -> tuple[Path, Path, Path]:
    cur = save_report(report, tmp_path / "cur.json")
    base = save_report(_with(report, "good", **{"mrr": 0.4}), tmp_path / "base.json")
    thr = tmp_path / "thr.yaml"
    return cur, base, thr


def test_cli_gate_passes(
    tmp_path: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    cur, base, thr = _files(tmp_path, report)
    thr.write_text("version: 1\nthresholds:\n  - {metric: mrr, mode: good, min: 0.9}\n")
    rc = ragline_main(
        ["eval", "--report", str(cur), "--baseline", str(base), "--thresholds", str(thr)]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "improvements: 1" in out and "gate: PASS" in out
    assert "FAILED CASE" in out  # the leaky mode's forbidden hit is always listed


def test_cli_gate_fails(tmp_path: Path, report: Report, capsys: pytest.CaptureFixture[str]) -> None:
    cur, _base, thr = _files(tmp_path, report)
    thr.write_text("version: 1\nthresholds:\n  - {metric: forbidden_hits, max: 0}\n")
    assert ragline_main(["eval", "--report", str(cur), "--thresholds", str(thr)]) == 1
    assert "gate: FAIL" in capsys.readouterr().out


def test_cli_config_errors(tmp_path: Path, report: Report) -> None:
    cur, _, thr = _files(tmp_path, report)
    thr.write_text("thresholds: [{metric: mrr}]\n")
    assert ragline_main(["eval", "--report", str(cur), "--thresholds", str(thr)]) == 2
    assert ragline_main(["eval", "--report", str(tmp_path / "none.json")]) == 2
    assert ragline_main(["eval", "--dataset", "trec:/x"]) == 2


def test_cli_several_datasets_report_and_gate_each(
    tmp_path: Path,
    report: Report,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--dataset A --dataset B`` (both golden sets on one stack): one report per dataset
    under --out/<name>, each gated by its own thresholds.yaml; the worst verdict wins."""
    sets = []
    for name, rule in (
        ("one", "{metric: mrr, mode: good, min: 0.0}"),
        ("two", "{metric: forbidden_hits, max: 0}"),
    ):
        root = tmp_path / name
        root.mkdir()
        (root / "thresholds.yaml").write_text(f"version: 1\nthresholds:\n  - {rule}\n")
        sets.append(root)
    reports = [
        report.model_copy(
            update={"meta": report.meta.model_copy(update={"dataset": f"golden:{r.name}"})}
        )
        for r in sets
    ]

    async def fake_produce(args: object) -> list[Report]:
        return reports

    monkeypatch.setattr("ragline.evaluation.cli._produce", fake_produce)
    out = tmp_path / "out"
    argv = [
        "eval",
        "--out",
        str(out),
        "--dataset",
        f"golden:{sets[0]}",
        "--dataset",
        f"golden:{sets[1]}",
    ]
    assert ragline_main(argv) == 1  # set "two" forbids the leaky mode's hit
    text = capsys.readouterr().out
    assert "== golden:one" in text and "== golden:two" in text
    assert text.count("gate: PASS") == 1 and text.count("gate: FAIL") == 1
    assert (out / "golden-one" / "report.json").is_file()
    assert (out / "golden-two" / "report.json").is_file()
    # a baseline or thresholds file belongs to one dataset
    assert ragline_main([*argv, "--thresholds", str(sets[0] / "thresholds.yaml")]) == 2
