"""``ragline topics plan``: the topics ``topics create`` would make (from the one table,
with each topic's configs) and the ACLs each service needs, offline (issue 36, item 6)."""

from __future__ import annotations

import json

import pytest

from ragline.cli import main
from ragline.events import ALL_TOPICS, Topics, dlq_topic, lane_topic
from ragline.runtime.topics import TopicSettings, topic_configs
from ragline.runtime.topology import TOPOLOGY, consumer_group


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    assert main(["topics", "plan", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _allowed(plan: dict, principal: str, op: str, rtype: str) -> set[str]:  # type: ignore[type-arg]
    return {
        r["resource"]
        for r in plan["acls"][principal]
        if r["operation"] == op and r["resource_type"] == rtype
    }


def test_the_plan_is_every_topic_of_the_table_with_its_configs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGLINE_KAFKA_TOPIC_PREFIX", "stg.")
    monkeypatch.setenv("RAGLINE_TOPICS_RAW_RETENTION_HOURS", "24")
    plan = _plan(capsys, "--partitions", "12")
    assert [t["name"] for t in plan["topics"]] == [f"stg.{t}" for t in ALL_TOPICS]
    for t in plan["topics"]:
        logical = t["name"].removeprefix("stg.")
        assert (t["partitions"], t["replication_factor"]) == (12, 3)
        assert t["configs"] == topic_configs(
            logical,
            TopicSettings(raw_retention_hours=24),
            replication_factor=3,
            max_message_bytes=900_000,
        )
    by_name = {t["name"]: t["configs"] for t in plan["topics"]}
    assert by_name["stg.doc.parsed.bulk"]["retention.ms"] == str(24 * 3_600_000)
    assert by_name["stg.doc.scanned"]["min.insync.replicas"] == "2"
    one = _plan(capsys, "--replication-factor", "1")
    assert {t["configs"]["min.insync.replicas"] for t in one["topics"]} == {"1"}


def test_each_stage_may_read_write_and_commit_exactly_what_the_runtime_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = _plan(capsys)
    for svc in TOPOLOGY:
        reads = _allowed(plan, svc.name, "Read", "Topic")
        writes = _allowed(plan, svc.name, "Write", "Topic")
        groups = _allowed(plan, svc.name, "Read", "Group")
        for t in svc.consumes:  # both lanes, and the dead letters of what it reads
            assert {t, lane_topic(t, "bulk")} <= reads
            assert dlq_topic(t) in writes
        for t in (*svc.produces, Topics.DOC_QUARANTINED.value):
            assert {t, lane_topic(t, "bulk")} <= writes
        assert consumer_group(svc.name) in groups
        laned = any(lane_topic(t, "bulk") != t for t in svc.consumes)
        assert (consumer_group(svc.name, lane="bulk") in groups) == laned
        # nothing more: a stage never reads another stage's input
        assert reads == {
            lane_topic(t, lane) for t in svc.consumes for lane in ("interactive", "bulk")
        }
    # the indexer reads the fast path and the quarantine events as well
    assert {"doc.control", "doc.control.bulk", "doc.quarantined"} <= _allowed(
        plan, "indexer", "Read", "Topic"
    )
    # the webhook runs inside the connector: it writes the intake topic too
    assert "source.changes" in _allowed(plan, "connector", "Write", "Topic")
    assert _allowed(plan, "sync-watch", "Write", "Topic") == {
        "source.changes",
        "source.changes.bulk",
    }
    dlq = _allowed(plan, "dlq-tool", "Read", "Topic")
    assert dlq == {dlq_topic(t.value) for t in Topics}
    assert _allowed(plan, "dlq-tool", "Read", "Group") == {"ragline-dlq-tool"}


def test_the_text_plan_prints_kafka_acls_arguments_under_the_prefix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGLINE_KAFKA_TOPIC_PREFIX", "prod.")
    assert main(["topics", "plan"]) == 0
    out = capsys.readouterr().out
    assert "prod.doc.embedded.bulk" in out
    assert (
        "--add --allow-principal User:embedder --operation Read --group prod.ragline-embedder-bulk"
        in out
    )
    assert (
        "--add --allow-principal User:operator --operation Create --topic prod. "
        "--resource-pattern-type prefixed" in out
    )
    assert "--topic doc." not in out  # every name carries the install's prefix
