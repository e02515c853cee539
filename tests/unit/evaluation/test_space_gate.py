"""The embedding-space gate's decision on synthetic reports (the real-stack run is
tests/integration/spaces/test_spaces_gate.py, `make spaces-gate`)."""

from __future__ import annotations

from datetime import UTC, datetime

from ragline.evaluation.gate import Threshold, ThresholdConfig
from ragline.evaluation.report import ModeReport, Report, ReportMeta
from ragline.evaluation.space_gate import gate_reports


def report(**overall: float | None) -> Report:
    meta = ReportMeta(
        dataset="t",
        kind="golden",
        created_at=datetime.now(UTC),
        modes=["dense"],
        top_k=10,
        concurrency=1,
        n_cases=1,
        n_documents=1,
    )
    return Report(meta=meta, modes={"dense": ModeReport(overall=overall, by_category={})}, cases=[])


DROP = ThresholdConfig(thresholds=(Threshold(metric="ndcg@10", max_drop=0.02),))


def test_a_drop_beyond_the_threshold_refuses() -> None:
    live = report(**{"ndcg@10": 0.70, "forbidden_hits": 0, "error_rate": 0})
    worse = report(**{"ndcg@10": 0.60, "forbidden_hits": 0, "error_rate": 0})
    assert [v.metric for v in gate_reports(worse, live, DROP)] == ["ndcg@10"]


def test_within_the_threshold_or_better_promotes() -> None:
    live = report(**{"ndcg@10": 0.70, "forbidden_hits": 0, "error_rate": 0})
    for value in (0.69, 0.70, 0.85):
        assert gate_reports(report(**{"ndcg@10": value, "forbidden_hits": 0}), live, DROP) == []


def test_forbidden_hits_and_errors_refuse_even_without_a_threshold_for_them() -> None:
    live = report(**{"ndcg@10": 0.70, "forbidden_hits": 0, "error_rate": 0})
    leaky = report(**{"ndcg@10": 0.90, "forbidden_hits": 1, "error_rate": 0})
    broken = report(**{"ndcg@10": 0.90, "forbidden_hits": 0, "error_rate": 0.1})
    empty = ThresholdConfig()
    assert [v.metric for v in gate_reports(leaky, live, empty)] == ["forbidden_hits"]
    assert [v.metric for v in gate_reports(broken, live, empty)] == ["error_rate"]
