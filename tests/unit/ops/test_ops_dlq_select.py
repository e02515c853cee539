"""Filter matching and the offset plan of the dlq tool (pure logic)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.ops.dlq_reader import DLQ_TOPICS, normalize_topic
from ragline.ops.dlq_select import Selector, parse_age, plan_partition

NOW = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Facts:
    error_class: str = "ValidationError"
    stage: str = "parser"
    tenant_id: str | None = "acme"
    failed_at: datetime = NOW - timedelta(hours=1)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("12h", 43200), ("7d", 604800), ("2w", 1209600), ("1.5h", 5400)],
)
def test_parse_age(text: str, seconds: int) -> None:
    assert parse_age(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "7", "d", "-1d", "3y", "1 day"])
def test_parse_age_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not an age"):
        parse_age(text)


def test_empty_selector_selects_everything() -> None:
    sel = Selector()
    assert sel.selects_all
    assert sel.matches(Facts(), NOW)
    assert sel.matches(Facts(tenant_id=None), NOW)


def test_selector_fields_combine_with_and() -> None:
    sel = Selector(error_classes=frozenset({"BackendUnavailable"}), stages=frozenset({"indexer"}))
    assert not sel.selects_all
    assert sel.matches(Facts(error_class="BackendUnavailable", stage="indexer"), NOW)
    assert not sel.matches(Facts(error_class="BackendUnavailable", stage="parser"), NOW)
    assert not sel.matches(Facts(error_class="ValidationError", stage="indexer"), NOW)


def test_selector_tenant_and_age() -> None:
    sel = Selector(tenants=frozenset({"acme"}), older_than=timedelta(hours=2))
    assert not sel.matches(Facts(), NOW)  # only 1 h old
    assert sel.matches(Facts(failed_at=NOW - timedelta(hours=3)), NOW)
    assert not sel.matches(Facts(tenant_id="other", failed_at=NOW - timedelta(days=1)), NOW)
    assert not sel.matches(Facts(tenant_id=None, failed_at=NOW - timedelta(days=1)), NOW)


def test_plan_nothing_selected_commits_nothing() -> None:
    plan, n = plan_partition([(5, False), (6, False)])
    assert n == 0
    assert plan.commit_to is None
    assert not plan.requeue


def test_plan_requeues_only_kept_records_before_the_last_handled() -> None:
    plan, n = plan_partition([(10, False), (11, True), (12, False), (13, True), (14, False)])
    assert n == 2
    assert plan.handle == {11, 13}
    assert plan.requeue == {10, 12}  # 14 stays pending where it is
    assert plan.commit_to == 14
    assert plan.last == 13


def test_plan_budget_stops_handling() -> None:
    plan, n = plan_partition([(0, True), (1, False), (2, True), (3, True)], budget=2)
    assert n == 2
    assert plan.handle == {0, 2}
    assert plan.requeue == {1}
    assert plan.commit_to == 3  # offset 3 stays pending


def test_plan_zero_budget() -> None:
    plan, n = plan_partition([(0, True)], budget=0)
    assert (n, plan.commit_to) == (0, None)


@given(st.lists(st.booleans(), max_size=40), st.one_of(st.none(), st.integers(0, 40)))
def test_plan_invariants(marks: list[bool], budget: int | None) -> None:
    """After a run the pending set is exactly the kept records: everything below the
    commit is handled or requeued, nothing handled is requeued, the budget holds."""
    decisions = [(100 + i, m) for i, m in enumerate(marks)]
    plan, n = plan_partition(decisions, budget=budget)
    assert n == len(plan.handle)
    assert not plan.handle & plan.requeue
    if budget is not None:
        assert n <= budget
    wanted = [o for o, m in decisions if m]
    assert n == (len(wanted) if budget is None else min(budget, len(wanted)))
    if plan.commit_to is None:
        assert n == 0
        return
    below = {o for o, _ in decisions if o < plan.commit_to}
    assert below == plan.handle | plan.requeue
    assert all(m for o, m in decisions if o in plan.handle)
    assert max(plan.handle) == plan.commit_to - 1


def test_topic_names() -> None:
    assert normalize_topic("doc.parsed") == "doc.parsed.dlq"
    assert normalize_topic("doc.parsed.dlq") == "doc.parsed.dlq"
    assert "source.changes.dlq" in DLQ_TOPICS
    assert all(t.endswith(".dlq") for t in DLQ_TOPICS)
