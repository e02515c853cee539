"""The SciFact location is a setting; a missing dataset says where to get it, and no
benchmark needs it (or anything else) to print its --help; every benchmark `make bench`
runs declares a smoke mode (--quick), which skips clearly without SciFact (issue 36, item 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from eval_helpers import bench_module

from ragline.evaluation.scifact import SCIFACT_ARCHIVE_URL, DatasetMissing, scifact_dir
from ragline.evaluation.settings import EvalSettings

REPO = Path(__file__).resolve().parents[3]
BENCH = REPO / "bench"


def _beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv"):
        (folder / name).write_text("")
    return folder


def test_the_setting_is_the_only_place_looked_in_when_set(tmp_path: Path) -> None:
    found = _beir(tmp_path / "mine")
    assert scifact_dir(EvalSettings(scifact_dir=found), repo=REPO) == found
    with pytest.raises(DatasetMissing) as err:
        scifact_dir(EvalSettings(scifact_dir=tmp_path / "nowhere"), repo=_beir(tmp_path / "x"))
    msg = str(err.value)
    assert str(tmp_path / "nowhere") in msg and SCIFACT_ARCHIVE_URL in msg
    assert "RAGLINE_SCIFACT_DIR" in msg and "qrels/train.tsv" in msg


def test_unset_looks_in_the_user_cache_then_beside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo = tmp_path / "work" / "checkout"
    with pytest.raises(DatasetMissing, match="datasets/scifact"):
        scifact_dir(EvalSettings(), repo=repo)
    shared = _beir(tmp_path / "work" / "shared" / "eval" / "scifact")
    assert scifact_dir(EvalSettings(), repo=repo) == shared
    cached = _beir(tmp_path / "home" / ".cache" / "ragline" / "datasets" / "scifact")
    assert scifact_dir(EvalSettings(), repo=repo) == cached


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGLINE_SCIFACT_DIR": "/nonexistent/scifact"}
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO, check=False,
    )  # fmt: skip


def _run_all() -> dict[str, tuple[str, list[str], str]]:
    """``bench/run_all.py``'s table of benchmarks (the script is not a package)."""
    benches: dict[str, tuple[str, list[str], str]] = bench_module("run_all").BENCHES
    return benches


def test_every_bench_script_answers_help_without_the_dataset() -> None:
    scripts = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))
    assert len(scripts) > 10
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = dict(zip(scripts, pool.map(lambda s: _run(s, "--help"), scripts), strict=True))
    failed = {p.name: (r.returncode, r.stderr[-300:]) for p, r in done.items() if r.returncode}
    assert failed == {}
    # `make bench BENCH_ARGS=--quick` (run by .ci/run) adds --quick to every script it runs:
    # each must declare its own smoke mode
    run = {script for script, _, _ in _run_all().values()}
    assert len(run) > 10
    undeclared = sorted(s for s in run if "--quick" not in done[BENCH / s].stdout)
    assert undeclared == []


def test_a_quick_run_without_the_dataset_is_a_clear_skip_not_a_failure() -> None:
    r = _run(BENCH / "index_bench.py", "--quick")
    assert r.returncode == 75  # bench/_paths.SKIPPED: run_all reports "skipped"
    assert "skipped" in r.stdout and SCIFACT_ARCHIVE_URL in r.stdout
    assert "/nonexistent/scifact" in r.stdout


def test_eval_scifact_without_the_dataset_says_where_to_get_it() -> None:
    r = _run(BENCH / "eval_scifact.py", "--limit", "1")
    assert r.returncode == 2
    assert SCIFACT_ARCHIVE_URL in r.stderr and "/nonexistent/scifact" in r.stderr


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"name": "on", "env": {}, "modes": ["hybrid"]}, ({}, ["hybrid"])),
        ({"name": "on", "modes": "hybrid, dense"}, ({}, ["hybrid", "dense"])),
        ({"name": "off", "env": {"RAGLINE_X": 0}}, ({"RAGLINE_X": "0"}, ["hybrid"])),
    ],
)
def test_a_held_request_line_reads_modes_as_a_list_or_a_string(
    line: dict[str, object], expected: tuple[dict[str, str], list[str]]
) -> None:
    """A comma-separated ``modes`` string was split into letters and ended the held stack."""
    assert bench_module("eval_scifact")._held_request(line) == expected


@pytest.mark.parametrize("line", [{"env": {}}, {"name": "x", "env": ["A=1"]}, ["on"]])
def test_a_bad_held_request_line_is_a_clear_error(line: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        bench_module("eval_scifact")._held_request(line)
