"""Which dead letters may be replayed, and what the CLI prints (never the payload)."""

from __future__ import annotations

import base64
from collections import Counter
from datetime import UTC, datetime

import pytest

from ragline.errors import PermanentError, QuarantineError
from ragline.hashing import keyed_digest
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
    assert e.summary(id_key=b"k")["error_message"] == "record is not a DeadLetter"


def test_summary_never_carries_the_payload() -> None:
    e = _entry("doc.fetched.dlq", "doc.fetched")
    assert e.letter is not None and base64.b64decode(e.letter.original_b64).decode() == PAYLOAD
    summary = e.summary(id_key=b"k")
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


class _SecretInId(QuarantineError):
    withhold_body = True  # as the scanner's ScanBlocked


SECRET_ID = "fs:keys/AKIAIOSFODNN7EXAMPLE.txt"


def _blocked(reason_code: str) -> DlqEntry:
    letter = dead_letter(
        stage="scanner",
        topic="doc.parsed",
        partition=0,
        offset=1,
        key=SECRET_ID.encode(),
        value=PAYLOAD.encode(),
        headers={},
        exc=_SecretInId(reason_code, "a secret in document_id (an identity)"),
        attempts=1,
    ).model_copy(update={"document_id": SECRET_ID, "tenant_id": "acme"})
    return DlqEntry(
        topic="doc.parsed.dlq", partition=0, offset=9, key=SECRET_ID,
        timestamp=datetime(2026, 1, 1, tzinfo=UTC), value=b"", headers={}, letter=letter,
    )  # fmt: skip


@pytest.mark.parametrize("as_json", [False, True])
def test_list_prints_a_keyed_digest_for_an_id_holding_a_secret(
    capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    blocked = _blocked("secret_in_identity")
    assert blocked.secret_in_id
    row = blocked.summary(id_key=b"k1")
    assert row["document_id"] == keyed_digest(SECRET_ID, b"k1")
    assert row["document_id"] != blocked.summary(id_key=b"k2")["document_id"]  # keyed
    t = TopicReport(topic="doc.parsed.dlq", pending=1)
    t.see(blocked)
    report = DlqReport(action=Action.LIST, group="g", dry_run=False, topics=[t], records=[row])
    _print_report(report, as_json)
    out = capsys.readouterr().out
    assert "AKIAIOSFODNN7EXAMPLE" not in out and row["document_id"] in out
    # an ordinary block keeps its id in clear: the operator needs it
    other = _blocked("pii_blocked")
    assert not other.secret_in_id and other.summary(id_key=b"k1")["document_id"] == SECRET_ID
