"""Baselines: the slim summary round trip, the before/after table (hostile values too),
``ragline eval --baseline/--baseline-dir/--save-baseline`` and the committed baselines
the make targets compare with."""

from __future__ import annotations

import importlib.util
import math
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragline.cli import main as ragline_main
from ragline.evaluation.baseline import (
    BEFORE_AFTER_METRICS,
    SLIM_NOTE,
    baseline_path,
    dataset_slug,
    render_before_after,
    save_baseline,
    slim_report,
)
from ragline.evaluation.datasets import EvalDataset
from ragline.evaluation.evaluate import write_outputs
from ragline.evaluation.gate import ThresholdConfig
from ragline.evaluation.report import ModeReport, Report, build_report, load_report, save_report
from ragline.evaluation.summary import CaseRun

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def report(tiny: EvalDataset, runs: dict[str, list[CaseRun]]) -> Report:
    return build_report(tiny, runs, top_k=100, concurrency=2)


def _edit(report: Report, mode: str, scope: str = "overall", **values: float | None) -> Report:
    """A copy of ``report`` with some metrics of ``mode`` (overall or one category) set."""
    data = report.model_dump()
    m = data["modes"][mode]
    table = m["overall"] if scope == "overall" else m["by_category"].setdefault(scope, {})
    table.update(values)
    return Report.model_validate(data)


def _rows(table: str) -> dict[tuple[str, str], list[str]]:
    """(mode, metric) -> [before, after, delta, change] from the main table."""
    out: dict[tuple[str, str], list[str]] = {}
    mode = ""
    body = table.split("\n\n")[1].splitlines()[2:]
    for line in body:
        cells = re.split(r"\s{2,}", line.strip())
        if not line.startswith(" "):
            mode, cells = cells[0], cells[1:]
        out[(mode, cells[0])] = cells[1:]
    return out


# ------------------------------------------------------------------ the before/after table


def test_table_every_key_metric_before_after_delta(report: Report) -> None:
    before = _edit(report, "good", mrr=0.5, latency_p95_ms=10.0, forbidden_hits=2.0)
    text = render_before_after(report, before)
    rows = _rows(text)
    assert {metric for (_, metric) in rows} == set(BEFORE_AFTER_METRICS)
    assert rows[("good", "mrr")] == ["0.500", "1.000", "+0.500", "better"]
    assert rows[("good", "forbidden_hits")] == ["2", "0", "-2", "better"]
    p95 = report.value("good", "latency_p95_ms")
    assert p95 is not None and rows[("good", "latency_p95_ms")][0] == "10.0"
    assert rows[("good", "latency_p95_ms")][3] == "worse"  # 10 ms -> ~20 ms
    assert rows[("good", "ndcg@10")] == ["1.000", "1.000", "+0.000"]  # unchanged: no mark
    # the per-category recall@10, before -> after for every mode
    assert re.search(r"^fact\s+1\s+1\.000 -> 1\.000\s+1\.000 -> 1\.000$", text, re.M)
    assert text.startswith("before: golden:tiny, commit ")
    assert "\nafter:  golden:tiny, commit " in text
    assert "note:" not in text  # like for like


def test_table_marks_use_the_thresholds_tolerance(report: Report) -> None:
    before = _edit(report, "good", mrr=0.97)
    assert _rows(render_before_after(report, before))[("good", "mrr")][3] == "better"
    loose = ThresholdConfig(tolerance=0.05)
    assert len(_rows(render_before_after(report, before, config=loose))[("good", "mrr")]) == 3


def test_table_hostile_values(report: Report) -> None:
    """NaN, inf, None and missing metrics read as n/a and never become a delta; a negative
    zero never shows."""
    before = _edit(
        report,
        "good",
        mrr=math.nan,
        **{"ndcg@10": None, "recall@10": math.inf, "recall@100": 1.0000001},
    )
    data = before.model_dump()
    del data["modes"]["good"]["overall"]["latency_p50_ms"]
    rows = _rows(render_before_after(report, Report.model_validate(data)))
    assert rows[("good", "mrr")] == ["n/a", "1.000", "n/a"]
    assert rows[("good", "ndcg@10")] == ["n/a", "1.000", "n/a"]
    assert rows[("good", "recall@10")] == ["n/a", "1.000", "n/a"]
    assert rows[("good", "recall@100")] == ["1.000", "1.000", "+0.000"]
    assert rows[("good", "latency_p50_ms")] == ["n/a", "15.0", "n/a"]
    zero = _edit(report, "good", latency_p50_ms=0.0)
    assert _rows(render_before_after(report, zero))[("good", "latency_p50_ms")][2] == "+15.0"


def test_table_modes_and_categories_on_one_side(report: Report) -> None:
    data = report.model_dump()
    data["modes"]["old"] = data["modes"].pop("leaky")
    data["modes"]["good"]["by_category"]["gone"] = {"n_cases": 3.0, "recall@10": 0.25}
    del data["modes"]["good"]["by_category"]["fact"]
    text = render_before_after(report, Report.model_validate(data))
    rows = _rows(text)
    assert rows[("leaky (new)", "mrr")] == ["n/a", "0.500", "n/a"]
    assert rows[("old (before only)", "mrr")] == ["0.500", "n/a", "n/a"]
    cats = text.split("\n\n")[2]
    assert cats.splitlines()[0].split()[-3:] == ["good", "leaky", "old"]
    assert re.search(r"^fact\s+1\s+n/a -> 1\.000\s+n/a -> 1\.000\s+1\.000 -> n/a$", cats, re.M)
    assert re.search(r"^gone\s+3 -> n/a\s+0\.250 -> n/a", cats, re.M)


def test_table_says_when_runs_are_not_like_for_like(report: Report) -> None:
    meta = report.meta.model_copy(update={"dataset": "golden:other", "n_cases": 5, "top_k": 20})
    text = render_before_after(report, report.model_copy(update={"meta": meta}))
    assert "note: the baseline is of another dataset (golden:other vs golden:tiny)" in text
    assert "note: cases differ (5 before, 2 after): not like for like" in text
    assert "note: top_k differ (20 before, 100 after): not like for like" in text


def test_table_without_categories_or_modes(report: Report) -> None:
    empty = report.model_copy(update={"modes": {}})
    text = render_before_after(empty, empty)
    assert "category" not in text and text.count("\n\n") == 1
    assert "mode" in render_before_after(report, empty)


_value = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**63), 2**63).map(float),
)
# no letters (a mode called "nan" would read like a value), but NUL, a zero-width space,
# a lone surrogate, separators
_name = st.text(alphabet="0123456789_:-/ \x00\u200b\ud800", min_size=1, max_size=12)
_table = st.dictionaries(st.sampled_from([*BEFORE_AFTER_METRICS, "n_cases", "x_ms"]), _value)
_modes = st.dictionaries(
    _name,
    st.builds(
        lambda o, c: ModeReport(overall=o, by_category=c),
        _table,
        st.dictionaries(_name, _table, max_size=3),
    ),
    max_size=3,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=_modes, after=_modes)
def test_table_never_fails(report: Report, before: Any, after: Any) -> None:
    """Any numbers (NaN, inf, +-2^63, None), hostile mode and category names: a table
    without a NaN or inf in it, and a slim baseline of finite numbers only."""
    a = report.model_copy(update={"modes": after, "cases": []})
    b = report.model_copy(update={"modes": before, "cases": []})
    text = render_before_after(a, b)
    assert not re.search(r"nan|inf", text.split("\n", 2)[2], re.I)
    slim = slim_report(b)
    for m in slim.modes.values():
        for t in (m.overall, *m.by_category.values()):
            assert all(v is not None and math.isfinite(v) for v in t.values())


# ------------------------------------------------------------------ the slim baseline


def test_slim_round_trip(tmp_path: Path, report: Report) -> None:
    hostile = _edit(report, "good", mrr=math.nan, **{"recall@100": math.inf})
    path = save_baseline(hostile, tmp_path / "b.json")
    back = load_report(path)
    assert back.cases == [] and back.meta.dataset == "golden:tiny"
    assert back.meta.notes == [SLIM_NOTE]
    assert back.value("good", "mrr") is None and back.value("good", "recall@100") is None
    for mode in report.modes:  # everything else as it was (rounded)
        for metric, v in report.modes[mode].overall.items():
            if v is not None and (mode, metric) not in {
                ("good", "mrr"),
                ("good", "recall@100"),
            }:
                assert back.value(mode, metric) == pytest.approx(v, abs=1e-6)
        for cat, t in report.modes[mode].by_category.items():
            for metric, v in t.items():
                expect = None if metric.endswith("_ms") else v  # timings: run-wide only
                assert back.value(mode, metric, cat) == pytest.approx(expect, abs=1e-6)
    # slimming twice changes nothing (the note once)
    again = slim_report(back)
    assert (again.meta, again.modes) == (back.meta, back.modes)
    # a directory: <dir>/<dataset>.json
    (tmp_path / "dir").mkdir()
    assert save_baseline(report, tmp_path / "dir") == tmp_path / "dir" / "golden-tiny.json"


def test_full_reports_still_load_and_compare_with_slim(tmp_path: Path, report: Report) -> None:
    full = load_report(save_report(report, tmp_path / "full.json"))
    assert full.cases and full.abstention_sweep
    slim = load_report(save_baseline(report, tmp_path / "slim.json"))
    rows = _rows(render_before_after(full, slim))
    assert all(len(cells) == 3 or cells[3] == "" for cells in rows.values())  # no change


def test_baseline_names() -> None:
    assert dataset_slug("beir:scifact:train") == "beir-scifact-train"
    assert dataset_slug("golden:a/b") == "golden-a-b"
    assert baseline_path(Path("d"), "golden:golden") == Path("d/golden-golden.json")


def test_write_outputs_puts_the_table_in_report_txt(tmp_path: Path, report: Report) -> None:
    write_outputs(report, tmp_path / "no", None)
    assert "before:" not in (tmp_path / "no" / "report.txt").read_text()
    write_outputs(report, tmp_path / "yes", _edit(report, "good", mrr=0.5))
    txt = (tmp_path / "yes" / "report.txt").read_text()
    assert txt.startswith("before: golden:tiny")
    assert re.search(r"mrr\s+0\.500\s+1\.000\s+\+0\.500\s+better", txt)
    assert re.search(r"^metric\s+good\s+leaky$", txt, re.M)  # the run's own tables follow


# ------------------------------------------------------------------ ragline eval


def test_cli_report_with_baseline_prints_the_table_and_saves_one(
    tmp_path: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    cur = save_report(report, tmp_path / "cur.json")
    base = save_baseline(_edit(report, "good", mrr=0.5), tmp_path / "base.json")
    argv = ["eval", "--report", str(cur), "--baseline", str(base)]
    assert ragline_main([*argv, "--save-baseline", str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert "before: golden:tiny" in out and "category (recall@10, before -> after)" in out
    assert "improvements: 1" in out  # the gate's list is still there
    saved = tmp_path / "new" / "golden-tiny.json"
    assert f"baseline saved: {saved}" in out
    assert load_report(saved).value("good", "mrr") == 1.0
    # --save-baseline names a directory; a file there is refused
    assert ragline_main([*argv, "--save-baseline", str(cur)]) == 2


def _two_sets(tmp_path: Path, report: Report) -> tuple[list[Path], list[Report]]:
    sets, reports = [], []
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        sets.append(root)
        meta = report.meta.model_copy(update={"dataset": f"golden:{name}"})
        reports.append(report.model_copy(update={"meta": meta}))
    return sets, reports


def test_cli_several_datasets_each_against_its_baseline(
    tmp_path: Path,
    report: Report,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sets, reports = _two_sets(tmp_path, report)

    async def fake_produce(args: object) -> list[Report]:
        return reports

    monkeypatch.setattr("ragline.evaluation.cli._produce", fake_produce)
    argv = ["eval", "--out", str(tmp_path / "out")]
    argv += [x for s in sets for x in ("--dataset", f"golden:{s}")]
    bdir = tmp_path / "baselines"
    bdir.mkdir()
    save_baseline(_edit(reports[1], "good", mrr=0.25), bdir)  # only "two" has one
    assert ragline_main([*argv, "--baseline-dir", str(bdir)]) == 0
    out = capsys.readouterr().out
    assert f"note: no baseline for golden:one ({bdir / 'golden-one.json'} does not exist)" in out
    one, two = out.split("== golden:two")
    assert "before:" not in one and "before: golden:two" in two
    assert re.search(r"mrr\s+0\.250\s+1\.000\s+\+0\.750\s+better", two)
    assert "before: golden:two" in (tmp_path / "out" / "golden-two" / "report.txt").read_text()

    # repeated --baseline: each file goes to the dataset it names, in any order
    b1 = save_baseline(_edit(reports[0], "good", mrr=0.125), tmp_path / "b1.json")
    b2 = save_baseline(_edit(reports[1], "good", mrr=0.375), tmp_path / "b2.json")
    assert ragline_main([*argv, "--baseline", str(b2), "--baseline", str(b1)]) == 0
    one, two = capsys.readouterr().out.split("== golden:two")
    assert "0.125" in one and "0.375" not in one and "0.375" in two
    # a baseline of no dataset of the run, or two of one: refused before anything runs
    other = save_baseline(report, tmp_path / "other.json")
    assert ragline_main([*argv, "--baseline", str(b1), "--baseline", str(other)]) == 2
    assert ragline_main([*argv, "--baseline", str(b1), "--baseline", str(b1)]) == 2
    assert ragline_main([*argv, "--baseline-dir", str(tmp_path / "nope")]) == 2
    with pytest.raises(SystemExit, match="2"):  # argparse: one or the other
        ragline_main([*argv, "--baseline", str(b1), "--baseline-dir", str(bdir)])
    # the refresh: every dataset's slim summary in one directory
    assert ragline_main([*argv, "--save-baseline", str(tmp_path / "fresh")]) == 0
    assert sorted(p.name for p in (tmp_path / "fresh").iterdir()) == [
        "golden-one.json",
        "golden-two.json",
    ]


# ------------------------------------------------------------------ the committed baselines


def _make_commands(target: str, *variables: str) -> str:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    out = subprocess.run(
        [make, "-n", "-o", "install", "-C", str(ROOT), target, *variables],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.replace("\\\n", " ")


def test_make_targets_compare_with_committed_baselines_that_load() -> None:
    """``make eval`` / ``make eval-scifact`` name baselines that exist, load, and are of
    the datasets the targets run (a renamed set or a moved file fails here, not after a
    run); ``SAVE_BASELINE=1`` refreshes them in place."""
    golden = _make_commands("eval")
    (bdir,) = re.findall(r"--baseline-dir (\S+)", golden)
    specs = re.findall(r"--dataset golden:(\S+)", golden)
    assert len(specs) == 2
    for spec in specs:
        name = f"golden:{Path(spec).name}"
        path = ROOT / baseline_path(Path(bdir), name)
        b = load_report(path)
        assert b.meta.dataset == name and b.meta.kind == "golden" and b.meta.top_k == 100
        assert set(b.modes) == {"lexical", "dense", "hybrid", "hybrid+rerank"}
        assert not b.cases and path.stat().st_size < 64_000, "not a slim baseline"
    scifact = _make_commands("eval-scifact")
    (path,) = re.findall(r"--baseline (\S+)", scifact)
    b = load_report(ROOT / path)
    assert b.meta.dataset == "beir:scifact:train" and b.value("hybrid", "ndcg@10") is not None
    assert not b.cases and (ROOT / path).stat().st_size < 64_000, "not a slim baseline"
    assert Path(path).parent == Path(bdir)
    for target in ("eval", "eval-scifact"):
        assert f"--save-baseline {bdir}" in _make_commands(target, "SAVE_BASELINE=1")
    assert "--save-baseline" not in golden + scifact


def test_scifact_tuning_table_starts_with_the_baseline_row() -> None:
    """bench/eval_scifact.py --tune: the committed baseline's hybrid row heads the table
    the steps are read against."""
    spec = importlib.util.spec_from_file_location(
        "eval_scifact", ROOT / "bench" / "eval_scifact.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    b = load_report(ROOT / "bench" / "baselines" / "beir-scifact-train.json")
    steps = [
        mod._baseline_step(b),
        {"step": "defaults", "env": {}, "hybrid": mod._row(b, "hybrid")},
        {"step": "rrf_k 20", "env": {"RAGLINE_QUERY_RRF_K": "20"}, "hybrid": mod._row(b, "x")},
    ]
    lines = mod._tuning_md(steps).splitlines()
    ndcg = f"{b.value('hybrid', 'ndcg@10'):.3f}"
    head = f"| baseline ({b.meta.git_commit}, {b.meta.created_at:%Y-%m-%d}) | (its own code"
    assert lines[2].startswith(head) and f"settings) | {ndcg} |" in lines[2]
    assert lines[3].startswith(f"| defaults | defaults | {ndcg} |")
    assert lines[4].startswith("| rrf_k 20 | RRF_K=20 | n/a |")
