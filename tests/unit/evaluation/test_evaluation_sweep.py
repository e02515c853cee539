"""The abstention sweep: replaying the similarity threshold from recorded strengths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import case_result

from ragline.evaluation.client import SearchResponse
from ragline.evaluation.datasets import EvalDataset
from ragline.evaluation.evaluate import write_outputs
from ragline.evaluation.metrics import Hit
from ragline.evaluation.report import (
    build_report,
    load_report,
    render_sweep,
    save_report,
    sweep_summary,
    with_sweep,
)
from ragline.evaluation.summary import CaseRun
from ragline.evaluation.sweep import THRESHOLDS, Strength, f1, strengths, sweep


def hit(doc: str) -> Hit:
    return Hit(document_id=doc, text=f"text of {doc}", chunk_id=f"c-{doc}")


def s(
    cid: str,
    sim: float | None,
    *,
    expect: bool | None,
    abstained: bool | None = None,
    sweepable: bool = True,
    recall: float | None = None,
) -> Strength:
    answerable = expect is False
    return Strength(
        case_id=cid,
        expect_abstain=expect,
        answerable=answerable,
        abstained=abstained if abstained is not None else (sim is not None and sim < 0.30),
        sweepable=sweepable,
        best_similarity=sim,
        recall=(recall if recall is not None else 1.0) if answerable else None,
    )


# four expected abstentions (strengths .22 .27 .33 .41), four answerable (.36 .45 .52 .70),
# one never-abstaining exact identifier match, one safety-only case
CASES = [
    s("u1", 0.22, expect=True),
    s("u2", 0.27, expect=True),
    s("u3", 0.33, expect=True),
    s("u4", 0.41, expect=True),
    s("a1", 0.36, expect=False, recall=0.5),
    s("a2", 0.45, expect=False),
    s("a3", 0.52, expect=False),
    s("a4", 0.70, expect=False),
    s("id", 0.05, expect=False, abstained=False, sweepable=False),
    s("adv", 0.10, expect=None),
]


def test_grid() -> None:
    assert THRESHOLDS[0] == 0.2 and THRESHOLDS[-1] == 0.6 and len(THRESHOLDS) == 17
    assert THRESHOLDS[4] == 0.3  # the default is a grid point, not 0.30000000000000004


def test_f1() -> None:
    assert f1(1.0, 0.5) == pytest.approx(2 / 3)
    assert f1(None, 0.0) == 0.0  # never abstained although some case expected it
    assert f1(0.0, 0.0) == 0.0
    assert f1(None, None) is None and f1(1.0, None) is None


def test_points_by_hand() -> None:
    sw = sweep(CASES, configured=0.30)
    assert sw.n_cases == 10 and sw.n_expectation == 9 and sw.n_answerable == 5
    assert sw.n_sweepable == 9  # the identifier case does not move
    at30 = sw.point(0.30)
    assert at30 is not None
    # abstains: u1, u2 (< .30) and adv (.10, safety-only: counted, not scored)
    assert at30.abstained == 3
    assert (at30.abstention_precision, at30.abstention_recall) == (1.0, 0.5)
    assert at30.false_abstains == 0 and at30.recall_lost == 0.0
    at40 = sw.point(0.40)
    assert at40 is not None
    # u1 u2 u3 right, a1 wrong (its recall 0.5 is lost out of 5 answerable cases)
    assert at40.abstention_precision == 0.75 and at40.abstention_recall == 0.75
    assert at40.false_abstains == 1 and at40.false_abstain_rate == pytest.approx(0.2)
    assert at40.recall_lost == pytest.approx(0.5 / 5)
    at20 = sw.point(0.20)
    assert at20 is not None and at20.abstained == 1  # only adv (.10); u1 .22 is above
    assert at20.abstention_precision is None and at20.abstention_recall == 0.0
    assert at20.abstention_f1 == 0.0
    # strictly below, like the service: .45 at threshold .45 answers
    assert sw.point(0.45).false_abstains == 1  # type: ignore[union-attr]


def test_best_respects_the_budget_and_prefers_the_configured_side() -> None:
    sw = sweep(CASES, configured=0.30)
    # no answerable case may be lost: thresholds .35 and .36 are the best without cost
    # (u1 u2 u3 abstain, a1 .36 answers); F1 = 2*1*.75/1.75
    assert sw.best == 0.35
    assert sw.best_range == (0.35, 0.35)
    assert sw.point(sw.best).abstention_f1 == pytest.approx(6 / 7)  # type: ignore[union-attr]
    # at any cost, .425 gets all four expected abstentions for one wrong one (F1 .889)
    assert sw.best_unconstrained == 0.425
    loose = sweep(CASES, configured=0.30, max_added_false_abstain_rate=0.2)
    assert loose.best == 0.425 and loose.max_added_false_abstain_rate == 0.2


def test_the_budget_counts_answerable_cases_lost_beyond_the_configured_threshold() -> None:
    # the configured threshold already silences one answerable case (.29): going higher
    # is free as long as no further one is lost
    cases = [*CASES, s("a0", 0.29, expect=False, abstained=True)]
    sw = sweep(cases, configured=0.30)
    assert sw.point(0.30).false_abstains == 1  # type: ignore[union-attr]
    assert sw.best == 0.35
    # without a configured threshold the budget is absolute: only below .29 costs nothing
    assert sweep(cases, configured=None).best == 0.275


def test_plateau_ties_go_to_the_configured_threshold() -> None:
    flat = [s("u", 0.10, expect=True), s("a", 0.90, expect=False)]
    sw = sweep(flat, configured=0.30)
    # every grid threshold separates them perfectly: the configured one is kept
    assert sw.best == 0.30 and sw.best_range == (0.2, 0.6)
    off_grid = sweep(flat, configured=0.31)
    assert off_grid.best == 0.31 and off_grid.point(0.31) is not None


def test_only_similarity_decisions_move() -> None:
    fixed = [
        s("none", None, expect=True, abstained=True, sweepable=False),  # no_results
        s("lex", None, expect=False, abstained=False, sweepable=False),
        s("rr", 0.9, expect=True, abstained=True, sweepable=False),  # rerank threshold
    ]
    sw = sweep(fixed, configured=None)
    assert sw.n_sweepable == 0 and sw.configured is None
    assert {p.abstained for p in sw.points} == {2}
    assert {p.abstention_recall for p in sw.points} == {1.0}


def test_regained_cases_have_unknown_recall() -> None:
    # an answerable case the run abstained on (.25 < .30): below .25 it would answer
    c = [s("a", 0.25, expect=False, abstained=True), s("u", 0.1, expect=True)]
    sw = sweep(c, configured=0.30)
    low, cur = sw.point(0.20), sw.point(0.30)
    assert low is not None and cur is not None
    assert (low.false_abstains, low.recall_unknown) == (0, 1)
    assert (cur.false_abstains, cur.recall_unknown, cur.recall_lost) == (1, 0, 0.0)


def _runs(tiny: EvalDataset) -> dict[str, list[CaseRun]]:
    # f1 is answerable (w:a), p1 expects an abstention
    return {
        "dense": [
            CaseRun(
                case_id="f1",
                mode="dense",
                hits=[hit("w:a")],
                abstain_signal="similarity",
                best_similarity=0.48,
                abstain_threshold=0.30,
            ),
            CaseRun(
                case_id="p1",
                mode="dense",
                hits=[hit("w:b")],
                abstain_signal="similarity",
                best_similarity=0.34,
                abstain_threshold=0.30,
            ),
        ],
        "lexical": [
            CaseRun(case_id="f1", mode="lexical", hits=[hit("w:a")], abstain_signal="none"),
            CaseRun(
                case_id="p1",
                mode="lexical",
                abstained=True,
                abstain_reason="no_results",
                abstain_signal="no_results",
            ),
        ],
    }


def test_report_carries_the_sweep(tiny: EvalDataset, tmp_path: Path) -> None:
    r = build_report(tiny, _runs(tiny), top_k=100, concurrency=1)
    dense = r.abstention_sweep["dense"]
    assert dense.configured == 0.30 and dense.n_sweepable == 2
    # the replay at the configured threshold reproduces the run: p1 answered (.34)
    at30 = dense.point(0.30)
    assert at30 is not None
    assert at30.abstention_recall == r.value("dense", "abstention_recall") == 0.0
    assert dense.best == 0.35 and dense.best_range == (0.35, 0.475)
    assert r.abstention_sweep["lexical"].n_sweepable == 0
    # JSON round trip, a report from before the sweep still loads
    back = load_report(save_report(r, tmp_path / "r.json"))
    assert back.abstention_sweep == r.abstention_sweep
    old = r.model_dump(mode="json", exclude={"abstention_sweep"})
    for c in old["cases"]:
        for k in ("abstain_signal", "best_similarity", "abstain_threshold"):
            del c[k]
    (tmp_path / "old.json").write_text(json.dumps(old))
    # the sweep is recomputed from the cases: without recorded strengths nothing moves
    assert load_report(tmp_path / "old.json").abstention_sweep["dense"].n_sweepable == 0
    assert with_sweep(r).abstention_sweep == r.abstention_sweep
    # a sweep stored under another rule does not make the report unreadable
    stale = r.model_dump(mode="json")
    stale["abstention_sweep"]["dense"]["retired_field"] = 1
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    assert load_report(tmp_path / "stale.json").abstention_sweep == r.abstention_sweep

    text = render_sweep(r)
    assert "abstention sweep (lexical): no similarity-decided case" in text
    line30 = next(x for x in text.splitlines() if x.startswith("0.300"))
    assert line30.endswith("configured")
    assert next(x for x in text.splitlines() if x.startswith("0.350")).endswith("best")
    assert sweep_summary(r) == [
        "abstention (dense): configured 0.300 (P n/a, R 0.000, 0 answerable abstained), "
        "suggested 0.350 (P 1.000, R 1.000, 0 answerable abstained)"
    ]
    written = write_outputs(r, tmp_path / "out")
    assert [p.name for p in written] == [
        "report.json",
        "report.txt",
        "report.png",
        "abstention.png",
    ]
    assert (tmp_path / "out" / "abstention.png").read_bytes()[:4] == b"\x89PNG"
    assert "abstention sweep (dense)" in (tmp_path / "out" / "report.txt").read_text()


def test_strengths_from_an_older_service() -> None:
    # no ``evidence``: answers carry their dense scores, abstentions carry nothing
    envelope: dict[str, Any] = {
        "version_scope": {"mode": "current", "note": "n"},
        "timings_ms": {},
        "trace_id": "t",
    }
    hit = {
        "chunk_id": "c",
        "document_id": "d",
        "text": "",
        "scores": {"dense_score": 0.41},
        "citation": {},
        "flags": {},
    }
    resp = SearchResponse.model_validate({**envelope, "results": [hit], "abstained": False})
    assert resp.best_similarity() == 0.41
    gone = SearchResponse.model_validate({**envelope, "results": [], "abstained": True})
    assert gone.best_similarity() is None
    answered = case_result(
        "a", mode="dense", metrics={"recall@10": 1.0}, abstained=False, best_similarity=0.41
    )
    silent = case_result(
        "b",
        mode="dense",
        metrics={"recall@10": 0.0},
        abstained=True,
        abstain_reason="below_similarity_threshold",
    )
    failed = answered.model_copy(update={"case_id": "c", "error": "boom"})
    got = strengths([answered, silent, failed])
    assert [(x.case_id, x.sweepable, x.abstained) for x in got] == [
        ("a", True, False),
        ("b", False, True),
    ]
