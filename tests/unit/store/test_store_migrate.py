"""The migration runner's pure logic: file discovery, ordering, checksums, planning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.store.migrate import (
    AppliedMigration,
    Migration,
    MigrationChecksumError,
    MigrationError,
    load_migrations,
    parse_filename,
    plan,
)


def mig(version: int, body: str = "SELECT 1;", name: str | None = None) -> Migration:
    return Migration(version=version, name=name or f"m{version}", sql=body)


def rec(m: Migration) -> AppliedMigration:
    return AppliedMigration(version=m.version, name=m.name, checksum=m.checksum)


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("0001_base.sql", (1, "base")),
        ("0010_answer_cache.sql", (10, "answer_cache")),
        ("0003_core2.sql", (3, "core2")),
        ("1_base.sql", None),
        ("0001-base.sql", None),
        ("0001_Base.sql", None),
        ("0001_.sql", None),
        ("0001_base.SQL", None),
        ("0001_base.sql.bak", None),
    ],
)
def test_parse_filename(filename: str, expected: tuple[int, str] | None) -> None:
    assert parse_filename(filename) == expected


def test_load_sorts_numerically_and_ignores_other_files(tmp_path: Path) -> None:
    (tmp_path / "0010_ten.sql").write_text("SELECT 10;")
    (tmp_path / "0002_two.sql").write_text("SELECT 2;")
    (tmp_path / "0001_one.sql").write_text("SELECT 1;")
    (tmp_path / "README.md").write_text("notes")
    loaded = load_migrations(tmp_path)
    assert [m.version for m in loaded] == [1, 2, 10]
    assert [m.name for m in loaded] == ["one", "two", "ten"]
    assert loaded[2].sql == "SELECT 10;"


def test_load_rejects_a_badly_named_sql_file(tmp_path: Path) -> None:
    (tmp_path / "0001_one.sql").write_text("SELECT 1;")
    (tmp_path / "2_two.sql").write_text("SELECT 2;")
    with pytest.raises(MigrationError, match=r"2_two\.sql"):
        load_migrations(tmp_path)


def test_load_rejects_duplicate_versions(tmp_path: Path) -> None:
    (tmp_path / "0003_core.sql").write_text("SELECT 1;")
    (tmp_path / "0003_cache.sql").write_text("SELECT 2;")
    with pytest.raises(MigrationError, match="share version 0003"):
        load_migrations(tmp_path)


def test_packaged_migrations_start_with_base_and_pgvector() -> None:
    loaded = load_migrations()
    assert loaded[0].label == "0001_base"
    assert "CREATE EXTENSION IF NOT EXISTS vector" in loaded[0].sql
    versions = [m.version for m in loaded]
    assert versions == sorted(set(versions))
    # no password in a repository file: the runner creates the login role from settings
    for m in loaded:
        assert not re.search(r"PASSWORD\s+'", m.sql, re.IGNORECASE), m.label


def test_checksum_tracks_content_not_line_endings() -> None:
    a = mig(1, "CREATE TABLE t (x int);\nSELECT 1;\n")
    crlf = mig(1, "CREATE TABLE t (x int);\r\nSELECT 1;\r\n")
    edited = mig(1, "CREATE TABLE t (x bigint);\nSELECT 1;\n")
    assert a.checksum == crlf.checksum
    assert a.checksum != edited.checksum
    assert len(a.checksum) == 64


def test_plan_returns_pending_in_version_order() -> None:
    ms = [mig(3), mig(1), mig(2), mig(10)]
    assert [m.version for m in plan(ms, {})] == [1, 2, 3, 10]
    applied = {1: rec(ms[1]), 3: rec(ms[0])}
    assert [m.version for m in plan(ms, applied)] == [2, 10]


def test_plan_nothing_left() -> None:
    ms = [mig(1), mig(2)]
    assert plan(ms, {m.version: rec(m) for m in ms}) == []


def test_plan_refuses_an_edited_applied_migration() -> None:
    original = mig(2, "CREATE TABLE a (x int);")
    edited = mig(2, "CREATE TABLE a (x text);")
    with pytest.raises(MigrationChecksumError, match=r"0002_m2\.sql changed"):
        plan([mig(1), edited, mig(3)], {1: rec(mig(1)), 2: rec(original)})


def test_plan_refuses_when_an_applied_file_is_gone() -> None:
    with pytest.raises(MigrationError, match="0002_m2 is recorded as applied"):
        plan([mig(1), mig(3)], {1: rec(mig(1)), 2: rec(mig(2))})


def test_plan_refuses_duplicate_versions() -> None:
    with pytest.raises(MigrationError, match="share version"):
        plan([mig(1, "SELECT 1;"), mig(1, "SELECT 2;")], {})


def test_plan_allows_a_version_below_the_newest_applied() -> None:
    # parallel numbering ranges (0003-0009 store, 0010-0019 cache): 0004 may arrive
    # after 0010 was applied; it is applied, not refused (docs/adr/0001)
    ms = [mig(1), mig(4), mig(10)]
    assert [m.version for m in plan(ms, {1: rec(ms[0]), 10: rec(ms[2])})] == [4]


def test_a_renamed_but_identical_file_is_not_a_change() -> None:
    applied = {1: AppliedMigration(version=1, name="old_name", checksum=mig(1).checksum)}
    assert plan([mig(1, name="new_name")], applied) == []


@given(
    versions=st.sets(st.integers(min_value=1, max_value=9999), min_size=1, max_size=30),
    data=st.data(),
)
def test_plan_is_the_ordered_complement_of_what_was_applied(
    versions: set[int], data: st.DataObject
) -> None:
    ms = [mig(v, f"SELECT {v};") for v in versions]
    done = data.draw(st.sets(st.sampled_from(sorted(versions))))
    pending = plan(ms, {v: rec(mig(v, f"SELECT {v};")) for v in done})
    assert [m.version for m in pending] == sorted(versions - done)
