"""Which dead letters may be replayed, and what the CLI prints (never the payload)."""

from __future__ import annotations

import base64
from collections import Counter
from datetime import UTC, datetime

import pytest

from ragline.errors import PermanentError
from ragline.ops.cli import _print_report
from ragline.ops.dlq import Action, DlqReport, TopicReport, replayable
from ragline.ops.dlq_reader import DlqEntry
from ragline.ops.dlq_select import UNREADABLE
from ragline.runtime.deadletter import dead_letter

PAYLOAD = "confidential payload text"


def _entry(dlq_topic: str, source_topic: str | None) -> DlqEntry:
    letter = None
    if source_topic is not None:
        letter = dead_letter(
            stage="parser",
            topic=source_topic,
            partition=1,
            offset=7,
            key=b"fs:t/a",
            value=PAYLOAD.encode(),
            headers={},
            exc=PermanentError("bad table"),
            attempts=1,
        )
    return DlqEntry(
        topic=dlq_topic,
        partition=0,
        offset=3,
        key="fs:t/a",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        value=letter.model_dump_json().encode() if letter else b"garbage",
        headers={},
        letter=letter,
    )


def test_replayable_only_to_its_own_pipeline_topic() -> None:
    assert replayable(_entry("doc.fetched.dlq", "doc.fetched"))
    assert not replayable(_entry("doc.parsed.dlq", "doc.fetched"))  # filed under another topic
    assert not replayable(_entry("custom.dlq", "custom"))  # not a pipeline topic
    assert not replayable(_entry("doc.fetched.dlq", None))  # not a DeadLetter


def test_unreadable_records_have_placeholder_facts() -> None:
    e = _entry("doc.fetched.dlq", None)
    assert (e.error_class, e.stage, e.tenant_id) == (UNREADABLE, UNREADABLE, None)
    assert e.failed_at == e.timestamp
    assert e.summary()["error_message"] == "record is not a DeadLetter"


def test_summary_never_carries_the_payload() -> None:
    e = _entry("doc.fetched.dlq", "doc.fetched")
    assert e.letter is not None and base64.b64decode(e.letter.original_b64).decode() == PAYLOAD
    summary = e.summary()
    assert PAYLOAD not in repr(summary)
    assert summary["error_class"] == "PermanentError"
    assert summary["error_message"] == "bad table"
    assert summary["source_topic"] == "doc.fetched"


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_report(capsys: pytest.CaptureFixture[str], as_json: bool) -> None:
    e = _entry("doc.fetched.dlq", "doc.fetched")
    t = TopicReport(topic="doc.fetched.dlq", pending=3, handled=1, requeued=1)
    t.see(e)
    report = DlqReport(action=Action.REPLAY, group="g", dry_run=True, topics=[t], records=[])
    _print_report(report, as_json)
    out = capsys.readouterr().out
    assert PAYLOAD not in out
    if as_json:
        assert '"handled": 1' in out and '"PermanentError": 1' in out
    else:
        assert "replayed 1 of 3 pending dead letters (group g), 1 kept records requeued" in out
        assert "dry run" in out
        assert "PermanentError=1" in out
    assert t.by_error_class == Counter({"PermanentError": 1})
