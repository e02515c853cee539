"""Migrations added from now on are additive (expand/contract, docs/adr/0010-event-
evolution.md): the previous release keeps running against the migrated schema during a
rolling upgrade, because `helm upgrade` migrates before the first new pod starts and old
pods serve until the rollout ends.

So a new migration may add (tables, nullable columns or columns with a default, indexes
CONCURRENTLY or not, views, functions, grants, NOT VALID constraints) but not take away
or narrow what the previous release reads or writes: no DROP, no RENAME, no column type
change, no SET NOT NULL, no NOT NULL column without a default, no constraint validated
against old writers. A contract step (dropping what no running release uses any more)
ships one release later, marked on its own line with ``-- contract: <why it is safe>``.
Migrations released before this rule (``RELEASED``) are not checked."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest
from hypothesis import given
from hypothesis import strategies as st

# every migration of release 0.1.0 (numbering ranges: docs/adr/0001-migrations.md)
RELEASED = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 10, 20})

_CONTRACT = re.compile(r"^[ \t]*--[ \t]*contract:[ \t]*\S[^\n]{8,}$", re.M)
_ADD_COLUMN = re.compile(
    r"\bADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?"
    r"(?!CONSTRAINT\b|CHECK\b|FOREIGN\b|PRIMARY\b|UNIQUE\b|EXCLUDE\b)([^;]*?)(?=,\s*ADD\b|;|$)",
    re.I | re.S,
)
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (why, re.compile(rx, re.I | re.S))
    for why, rx in (
        (
            "drops an object the previous release may use",
            r"\bDROP\s+(TABLE|COLUMN|VIEW|MATERIALIZED\s+VIEW|INDEX|TYPE|SCHEMA|FUNCTION|TRIGGER|POLICY|SEQUENCE)\b",
        ),
        ("drops a constraint old writers rely on (ON CONFLICT, FKs)", r"\bDROP\s+CONSTRAINT\b"),
        ("renames what the previous release names", r"\bRENAME\b"),
        (
            "changes a column type under the previous release",
            r"\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b",
        ),
        ("makes a column NOT NULL that old writers may leave empty", r"\bSET\s+NOT\s+NULL\b"),
        ("truncates data", r"\bTRUNCATE\b"),
        ("revokes what the previous release was granted", r"\bREVOKE\b"),
        (
            "adds a CHECK/FOREIGN KEY validated against old writers (use NOT VALID)",
            r"\bADD\s+(CONSTRAINT\s+\S+\s+)?(CHECK|FOREIGN\s+KEY)\b(?![^;]*\bNOT\s+VALID\b)",
        ),
    )
)


def _strip_comments(sql: str) -> str:
    sql = re.sub(r"/\*.*?\*/", " ", sql, flags=re.S)
    sql = re.sub(r"--[^\n]*", " ", sql)
    # string literals and dollar-quoted bodies (DO blocks are still checked: they run)
    return re.sub(r"'(?:[^']|'')*'", "''", sql)


def violations(sql: str) -> list[str]:
    """Why ``sql`` would break the previous release (empty: additive, or a marked
    contract step)."""
    if _CONTRACT.search(sql):
        return []
    body = _strip_comments(sql)
    found = [why for why, rx in _RULES if rx.search(body)]
    for m in _ADD_COLUMN.finditer(body):
        clause = m.group(1).upper()
        if re.search(r"\bNOT\s+NULL\b", clause) and not re.search(r"\bDEFAULT\b", clause):
            found.append("adds a NOT NULL column without a default: old inserts fail")
    return found


def _migrations() -> list[tuple[int, str, str]]:
    out = []
    for f in files("ragline.store").joinpath("migrations").iterdir():
        m = re.fullmatch(r"(\d{4})_[a-z0-9_]+\.sql", f.name)
        if m:
            out.append((int(m.group(1)), f.name, f.read_text()))
    return sorted(out)


def test_released_migrations_are_known() -> None:
    versions = {v for v, _, _ in _migrations()}
    assert versions >= RELEASED  # released files never disappear


@pytest.mark.parametrize(
    "name_sql",
    [(n, s) for v, n, s in _migrations() if v not in RELEASED],
    ids=lambda x: x[0],
)
def test_new_migrations_are_additive(name_sql: tuple[str, str]) -> None:
    name, sql = name_sql
    assert violations(sql) == [], f"{name} is not additive (expand/contract)"


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE chunks DROP COLUMN text;",
        "drop table documents",
        "ALTER TABLE documents RENAME COLUMN title TO name;",
        "ALTER TABLE chunks ALTER COLUMN token_count TYPE bigint;",
        "ALTER TABLE chunks ALTER COLUMN token_count SET DATA TYPE bigint;",
        "ALTER TABLE documents ALTER COLUMN title SET NOT NULL;",
        "ALTER TABLE documents ADD COLUMN owner text NOT NULL;",
        "ALTER TABLE documents ADD COLUMN IF NOT EXISTS owner text NOT NULL;",
        "ALTER TABLE documents ADD CONSTRAINT c CHECK (generation >= 0);",
        "ALTER TABLE chunks ADD FOREIGN KEY (doc) REFERENCES documents(id);",
        "ALTER TABLE documents DROP CONSTRAINT documents_pkey;",
        "DROP INDEX CONCURRENTLY chunks_doc_idx;",
        "TRUNCATE processed_events;",
        "REVOKE SELECT ON chunks FROM ragline_query;",
        "DO $$ BEGIN EXECUTE 'x'; DROP TABLE t; END $$;",
        "/* harmless */ ALTER TABLE t RENAME TO u; -- later",
    ],
)
def test_the_checker_catches_breaking_changes(sql: str) -> None:
    assert violations(sql), sql


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE IF NOT EXISTS t (id bigint PRIMARY KEY, name text NOT NULL);",
        "ALTER TABLE documents ADD COLUMN owner text;",
        "ALTER TABLE documents ADD COLUMN owner text NOT NULL DEFAULT '';",
        "ALTER TABLE documents ADD COLUMN n int DEFAULT 0 NOT NULL;",
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS i ON chunks (doc);",
        "ALTER TABLE documents ADD CONSTRAINT c CHECK (generation >= 0) NOT VALID;",
        "GRANT SELECT ON t TO ragline_query;",
        "COMMENT ON TABLE t IS 'we never DROP TABLE here';",
        "-- DROP TABLE documents was considered\nCREATE VIEW v AS SELECT 1;",
        "-- contract: 0.3.0 no longer reads chunks.legacy (removed in 0.2.0)\n"
        "ALTER TABLE chunks DROP COLUMN legacy;",
    ],
)
def test_the_checker_allows_additive_changes(sql: str) -> None:
    assert violations(sql) == [], sql


def test_a_contract_marker_needs_a_reason() -> None:
    assert violations("-- contract:\nDROP TABLE t;")
    assert violations("-- contract: ok\nDROP TABLE t;")  # too short to be a reason


@given(st.text(max_size=200))
def test_the_checker_never_crashes(sql: str) -> None:
    assert isinstance(violations(sql + "\x00\ud800"), list)
