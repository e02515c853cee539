"""The pure parts of ``ragline gc``: settings rules, the LRU arithmetic, which claim checks
a dead letter needs, the batch SQL, and what the CLI prints and returns."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from ragline.cli import main
from ragline.errors import PermanentError
from ragline.ops.dlq_reader import DlqEntry
from ragline.ops.retention import (
    RetentionReport,
    RetentionSettings,
    Table,
    TableReport,
    _delete_sql,
    claim_refs,
    lru_excess,
)
from ragline.ops.retention_cli import TABLES, _print
from ragline.runtime.deadletter import dead_letter
from ragline.store.claimcheck import CLAIM_HEADER

_ENV = (
    "CLAIM_CHECK_DAYS",
    "LEDGER_DAYS",
    "EMBEDDING_CACHE_DAYS",
    "EMBEDDING_CACHE_MAX_ROWS",
    "KAFKA_RETENTION_DAYS",
    "CHECK_DEAD_LETTERS",
    "DLQ_RETENTION_DAYS",
    "BATCH_SIZE",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(f"RAGLINE_RETENTION_{name}", raising=False)


def test_defaults_outlive_kafkas_default_retention() -> None:
    s = RetentionSettings()
    assert (s.claim_check_days, s.ledger_days) == (14, 30)
    assert (s.embedding_cache_days, s.embedding_cache_max_rows) == (90, 1_000_000)
    assert s.kafka_retention_days == 7
    assert s.check_dead_letters


def test_env_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLINE_RETENTION_CLAIM_CHECK_DAYS", "21")
    monkeypatch.setenv("RAGLINE_RETENTION_EMBEDDING_CACHE_MAX_ROWS", "5")
    s = RetentionSettings()
    assert (s.claim_check_days, s.embedding_cache_max_rows) == (21, 5)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"claim_check_days": 7}, "claim_check_days (7) must exceed kafka_retention_days"),
        ({"ledger_days": 3}, "ledger_days (3) must exceed"),
        ({"kafka_retention_days": 14}, "claim_check_days (14) must exceed"),
        ({"check_dead_letters": False, "dlq_retention_days": 30}, "dlq retention (30 days)"),
        ({"batch_size": 0}, "greater than or equal to 1"),
    ],
)
def test_rules_that_could_delete_a_needed_row_are_refused(
    kwargs: dict[str, object], words: str
) -> None:
    with pytest.raises(ValidationError, match=words.replace("(", r"\(").replace(")", r"\)")):
        RetentionSettings(**kwargs)  # type: ignore[arg-type]


def test_dead_letter_check_off_is_fine_when_the_dlq_expires_first() -> None:
    s = RetentionSettings(check_dead_letters=False, dlq_retention_days=10)
    assert s.claim_check_days == 14


@pytest.mark.parametrize(
    ("total", "aged", "cap", "want"),
    [(10, 0, 20, 0), (10, 0, 10, 0), (10, 0, 7, 3), (10, 4, 7, 0), (10, 2, 7, 1), (5, 5, 0, 0)],
)
def test_lru_excess(total: int, aged: int, cap: int, want: int) -> None:
    assert lru_excess(total=total, aged_out=aged, max_rows=cap) == want


def _entry(*, own: str | None, original: str | None, letter: bool = True) -> DlqEntry:
    dl = None
    if letter:
        dl = dead_letter(
            stage="parser",
            topic="doc.fetched",
            partition=0,
            offset=1,
            key=b"k",
            value=b"{}",
            headers={CLAIM_HEADER: original} if original else {},
            exc=PermanentError("x"),
            attempts=1,
        )
    return DlqEntry(
        topic="doc.fetched.dlq",
        partition=0,
        offset=0,
        key="k",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        value=b"",
        headers={CLAIM_HEADER: own} if own else {},
        letter=dl,
    )


def test_claim_refs_of_a_dead_letter() -> None:
    assert claim_refs(_entry(own=None, original="a")) == {"a"}
    assert claim_refs(_entry(own="b", original="a")) == {"a", "b"}
    assert claim_refs(_entry(own="b", original=None, letter=False)) == {"b"}
    assert claim_refs(_entry(own=None, original=None)) == set()


def test_batch_sql_locks_only_what_it_deletes() -> None:
    from psycopg import sql

    q = _delete_sql(Table.EMBEDDING_CACHE, sql.SQL("true"), "last_used_at").as_string(None)
    assert q.startswith('DELETE FROM "embedding_cache" WHERE ("model", "revision", "text_hash")')
    assert 'ORDER BY "last_used_at" LIMIT %(limit)s FOR UPDATE SKIP LOCKED' in q
    plain = _delete_sql(Table.LEDGER, sql.SQL("x"), None).as_string(None)
    assert "ORDER BY" not in plain and '("consumer", "event_id")' in plain


def test_cli_choices_match_the_tables() -> None:
    assert tuple(t.value for t in Table) == TABLES


def _report(dry: bool) -> RetentionReport:
    r = RetentionReport(dry_run=dry, started_at=datetime(2026, 1, 1, tzinfo=UTC))
    r.tables = [
        TableReport(
            table="claim_checks",
            rule="older than 14 d",
            eligible=3,
            deleted=0 if dry else 3,
            kept_referenced=2,
        ),
        TableReport(
            table="processed_events", rule="older than 30 d", error="BackendUnavailable: x"
        ),
    ]
    r.dead_letters_scanned = 9
    return r


def test_report_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    _print(_report(dry=True))
    out = capsys.readouterr().out
    assert "claim_checks       would delete          3" in out
    assert "kept 2 referenced by pending dead letters" in out
    assert "FAILED: BackendUnavailable: x" in out
    assert "pending dead letters read: 9" in out
    assert "dry run: nothing deleted" in out
    rep = _report(dry=False)
    assert not rep.ok
    js = rep.to_json()
    assert js["ok"] is False and js["tables"][0]["deleted"] == 3


def test_cli_bad_settings_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gc", "--batch-size", "0", "--no-progress"]) == 2
    monkeypatch.setenv("RAGLINE_RETENTION_CLAIM_CHECK_DAYS", "3")
    assert main(["gc", "--dry-run", "--no-progress"]) == 2
    assert "must exceed kafka_retention_days" in capsys.readouterr().err
