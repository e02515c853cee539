"""The dashboard and the alert rules shipped with the chart use only metrics the code
registers, cover what operators need, and render into valid objects."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from _deploy_helpers import CHART, LIBS, REPO, Render, kinds

DASHBOARD = CHART / "dashboards" / "ragline-overview.json"
RULES = CHART / "alerts" / "ragline-rules.yaml"
METRIC = re.compile(r"\bragline_[a-z0-9_]+\b")
_KINDS = {"Counter", "Gauge", "Histogram", "Summary"}


def registered_metrics(roots: list[Path]) -> dict[str, str]:
    """``name -> kind`` of every prometheus-client metric constructed in the code: a call
    ``Counter|Gauge|Histogram|Summary("ragline_...", ...)`` (AST, no import needed)."""
    out: dict[str, str] = {}
    for root in roots:
        for path in root.rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and node.args):
                    continue
                fn = node.func
                kind = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
                first = node.args[0]
                if (
                    kind in _KINDS
                    and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                    and first.value.startswith("ragline_")
                ):
                    out[first.value] = str(kind)
    return out


def exposed_series(metrics: dict[str, str]) -> set[str]:
    """Series names prometheus-client exposes: counters end in _total (appended when the
    name lacks it), histograms add _bucket/_sum/_count, summaries _sum/_count."""
    names: set[str] = set()
    for name, kind in metrics.items():
        if kind == "Counter":
            base = name.removesuffix("_total")
            names |= {f"{base}_total", f"{base}_created"}
        elif kind == "Histogram":
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count", f"{name}_created"}
        elif kind == "Summary":
            names |= {name, f"{name}_sum", f"{name}_count", f"{name}_created"}
        else:
            names.add(name)
    return names


@pytest.fixture(scope="module")
def exposed() -> set[str]:
    metrics = registered_metrics([LIBS, REPO / "services"])
    # the AST scan finds the runtime's own metrics, or it is broken
    assert metrics["ragline_messages_consumed_total"] == "Counter"
    assert metrics["ragline_freshness_seconds"] == "Histogram"
    return exposed_series(metrics)


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for var in dash["templating"]["list"]:
        q = var.get("query")
        if isinstance(q, dict):
            exprs.append(q["query"])
    return exprs


@pytest.fixture(scope="module")
def rules(render: Render) -> list[dict[str, Any]]:
    docs = render("values-production.yaml")
    (rule,) = kinds(docs, "PrometheusRule")
    return [r for g in rule["spec"]["groups"] for r in g["rules"]]


def unknown_metrics(exprs: list[str], exposed: set[str]) -> set[str]:
    return {m for e in exprs for m in METRIC.findall(e)} - exposed


def test_the_checker_can_fail(exposed: set[str]) -> None:
    assert unknown_metrics(["rate(ragline_nope_total[5m])"], exposed) == {"ragline_nope_total"}
    # a histogram's bare name is not a series; a counter is exposed with _total
    assert unknown_metrics(["ragline_handler_seconds"], exposed) == {"ragline_handler_seconds"}
    assert not unknown_metrics(["ragline_handler_seconds_bucket"], exposed)


def test_dashboard_uses_only_registered_metrics(exposed: set[str]) -> None:
    exprs = dashboard_exprs()
    assert len(exprs) >= 20
    assert unknown_metrics(exprs, exposed) == set()


def test_alert_rules_use_only_registered_metrics(
    exposed: set[str], rules: list[dict[str, Any]]
) -> None:
    assert unknown_metrics([r["expr"] for r in rules], exposed) == set()
    assert unknown_metrics([RULES.read_text()], exposed) == set()


def test_dashboard_covers_the_operators_questions() -> None:
    used = {m for e in dashboard_exprs() for m in METRIC.findall(e)}
    wanted = {
        "ragline_messages_consumed_total",  # throughput per stage
        "ragline_consumer_lag_messages",  # lag per stage
        "ragline_dlq_messages_total",  # DLQ rate
        "ragline_freshness_seconds_bucket",  # freshness p95
        "ragline_query_stage_seconds_bucket",  # query latency by stage
        "ragline_embedding_chunks_total",  # cache hit rate
        "ragline_messages_failed_total",  # error rates
        "ragline_query_requests_total",  # query error rate
        "ragline_connector_lane_demotions_total",  # changes demoted to the bulk lane
    }
    assert wanted <= used


def test_dashboard_is_well_formed() -> None:
    dash = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24
        if p["type"] != "row":
            assert p["datasource"]["uid"] == "${datasource}"
            assert p["targets"]
    for e in dashboard_exprs():
        assert e.count("(") == e.count(")") and e.count("{") == e.count("}"), e


def test_alerts_cover_the_slos(rules: list[dict[str, Any]]) -> None:
    names = {r["alert"] for r in rules}
    assert {
        "RaglineFreshnessSLOBreach",
        "RaglineDeadLetters",
        "RaglineConsumerLagHigh",
        "RaglineQueryLatencyHigh",
        "RaglineQueryErrorRate",
        "RaglineStageErrorRate",
    } <= names
    for r in rules:
        assert r["labels"]["severity"] in {"page", "warning"}
        assert r["annotations"]["runbook_url"].startswith("https://")
        assert "#" in r["annotations"]["runbook_url"]
        assert "{{ ." not in r["expr"]  # chart values were substituted
        assert r["expr"].count("(") == r["expr"].count(")")


def test_alert_thresholds_come_from_values(render: Render) -> None:
    docs = render(
        values={
            "metrics": {"prometheusRule": {"enabled": True}},
            "alerts": {"freshnessP95Seconds": 42},
        }
    )
    (rule,) = kinds(docs, "PrometheusRule")
    fresh = next(
        r
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if r["alert"] == "RaglineFreshnessSLOBreach"
    )
    assert fresh["expr"].rstrip().endswith("> 42")
    # Prometheus' own templating survives helm's
    lag = next(
        r
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if r["alert"] == "RaglineConsumerLagHigh"
    )
    assert "{{ $labels.stage }}" in lag["annotations"]["summary"]


def test_runbook_anchors_exist(rules: list[dict[str, Any]]) -> None:
    doc = (REPO / "docs" / "operations.md").read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).strip().replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", doc, flags=re.M)
    }
    for r in rules:
        assert r["annotations"]["runbook_url"].split("#", 1)[1] in anchors


def test_dashboard_ships_as_a_configmap(render: Render) -> None:
    docs = render("values-production.yaml")
    (cm,) = [c for c in kinds(docs, "ConfigMap") if "ragline-overview.json" in c.get("data", {})]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["ragline-overview.json"]) == json.loads(DASHBOARD.read_text())
