"""Versioned SQL migrations: files ``NNNN_name.sql`` applied in version order, each in its
own transaction, recorded with a checksum in ``schema_migrations``, serialized across
processes by a Postgres advisory lock. Why a small runner and not a tool: docs/adr/0001.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from ragline.config import Settings
from ragline.errors import BackendUnavailable, RaglineError
from ragline.store.query_role import QueryRole, ensure_query_role

__all__ = [
    "LOCK_KEY",
    "AppliedMigration",
    "Migration",
    "MigrationChecksumError",
    "MigrationError",
    "MigrationReport",
    "applied_migrations",
    "apply_migrations",
    "load_migrations",
    "migrate",
    "migration_status",
    "parse_filename",
    "plan",
]

_log = logging.getLogger(__name__)

_FILE_RE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9][a-z0-9_]*)\.sql$")
# one fixed key for every ragline migration run ("ragline" in ASCII, fits a bigint)
LOCK_KEY = int.from_bytes(b"ragline", "big")

Conn = psycopg.Connection[TupleRow]
Prepare = Callable[[Conn], None]


class MigrationError(RaglineError):
    """The migration files or the recorded history are inconsistent, or a file failed."""


class MigrationChecksumError(MigrationError):
    """A file that was already applied has changed since: write a new migration instead."""


@dataclass(frozen=True, kw_only=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        # line endings normalized so a checkout with CRLF does not look like an edit
        return hashlib.sha256(self.sql.replace("\r\n", "\n").encode()).hexdigest()

    @property
    def label(self) -> str:
        return f"{self.version:04d}_{self.name}"


@dataclass(frozen=True, kw_only=True)
class AppliedMigration:
    version: int
    name: str
    checksum: str
    applied_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class MigrationReport:
    applied: tuple[Migration, ...]
    already_applied: int
    # versions applied below an already applied one (parallel numbering ranges, ADR 0001)
    out_of_order: tuple[int, ...] = ()


def parse_filename(filename: str) -> tuple[int, str] | None:
    """``(version, name)`` of a migration file name, or None if it is not one."""
    m = _FILE_RE.match(filename)
    if m is None:
        return None
    return int(m["version"]), m["name"]


def _default_dir() -> Traversable:
    return resources.files("ragline.store").joinpath("migrations")


def load_migrations(directory: Path | Traversable | None = None) -> list[Migration]:
    """Every migration in ``directory`` (default: the packaged ones), sorted by version.

    A ``.sql`` file with a malformed name or a duplicate version is an error, not skipped:
    a silently ignored migration is worse than a loud one.
    """
    root = directory if directory is not None else _default_dir()
    found: dict[int, Migration] = {}
    for entry in root.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        parsed = parse_filename(entry.name)
        if parsed is None:
            raise MigrationError(f"bad migration file name {entry.name!r}: want NNNN_name.sql")
        version, name = parsed
        if version in found:
            raise MigrationError(
                f"two migrations share version {version:04d}: "
                f"{found[version].label}.sql and {entry.name}"
            )
        found[version] = Migration(version=version, name=name, sql=entry.read_text("utf-8"))
    return [found[v] for v in sorted(found)]


def plan(
    available: Sequence[Migration], applied: Mapping[int, AppliedMigration]
) -> list[Migration]:
    """The migrations still to apply, in version order.

    Refuses when an applied file changed (checksum) or disappeared, or when two files
    share a version. A pending version below an applied one is allowed (ADR 0001).
    """
    by_version: dict[int, Migration] = {}
    for m in available:
        if m.version in by_version:
            raise MigrationError(f"two migrations share version {m.version:04d}")
        by_version[m.version] = m
    for version in sorted(applied):
        done = applied[version]
        current = by_version.get(version)
        if current is None:
            raise MigrationError(
                f"migration {version:04d}_{done.name} is recorded as applied but its file "
                "is gone; restore it"
            )
        if current.checksum != done.checksum:
            raise MigrationChecksumError(
                f"migration {current.label}.sql changed after it was applied "
                f"(recorded {done.checksum[:12]}, now {current.checksum[:12]}); "
                "never edit an applied migration, add a new one"
            )
    return [by_version[v] for v in sorted(by_version) if v not in applied]


_CREATE_TABLE = sql.SQL(
    """CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""
)


def applied_migrations(conn: Conn) -> dict[int, AppliedMigration]:
    """What ``schema_migrations`` records (empty when the table does not exist yet)."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute(
        "SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version"
    ).fetchall()
    out: dict[int, AppliedMigration] = {}
    for version, name, checksum, applied_at in rows:
        assert isinstance(version, int) and isinstance(name, str) and isinstance(checksum, str)
        assert applied_at is None or isinstance(applied_at, datetime)
        out[version] = AppliedMigration(
            version=version, name=name, checksum=checksum, applied_at=applied_at
        )
    return out


def _apply_one(conn: Conn, m: Migration) -> None:
    try:
        with conn.transaction():
            # bytes: several statements in one simple-protocol call, no parameters
            conn.execute(m.sql.encode("utf-8"))
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (m.version, m.name, m.checksum),
            )
    except psycopg.Error as exc:
        diag = exc.diag
        raise MigrationError(
            f"migration {m.label}.sql failed and was rolled back: "
            f"{diag.sqlstate or type(exc).__name__} {diag.message_primary or ''}".rstrip()
        ) from exc


def _connect(dsn: str) -> Conn:
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise BackendUnavailable(f"postgres unreachable for migrations: {exc}") from exc


def _locked_run(
    conn: Conn, available: list[Migration], prepare: Prepare | None, lock_timeout_s: float
) -> MigrationReport:
    conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(lock_timeout_s * 1000)}",))
    try:
        conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
    except psycopg.errors.LockNotAvailable as exc:
        raise MigrationError(
            f"another migration run held the lock for more than {lock_timeout_s:.0f} s"
        ) from exc
    try:
        conn.execute("RESET lock_timeout")
        conn.execute(_CREATE_TABLE)
        if prepare is not None:
            with conn.transaction():
                prepare(conn)
        applied = applied_migrations(conn)
        pending = plan(available, applied)
        top = max(applied, default=0)
        for m in pending:
            _apply_one(conn, m)
            _log.info("migration applied", extra={"fields": {"migration": m.label}})
    finally:
        if not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
    return MigrationReport(
        applied=tuple(pending),
        already_applied=len(applied),
        out_of_order=tuple(m.version for m in pending if m.version < top),
    )


def apply_migrations(
    dsn: str,
    *,
    migrations: Iterable[Migration] | None = None,
    prepare: Prepare | None = None,
    lock_timeout_s: float = 120.0,
) -> MigrationReport:
    """Apply every pending migration to the database at ``dsn``.

    ``prepare`` runs first, in its own transaction and under the same lock (the stack
    uses it to create the query role that later migrations grant to). Safe to call from
    many processes at once: the advisory lock makes the others wait, then find nothing
    to do.
    """
    available = list(migrations) if migrations is not None else load_migrations()
    with _connect(dsn) as conn:
        try:
            return _locked_run(conn, available, prepare, lock_timeout_s)
        except psycopg.OperationalError as exc:
            raise BackendUnavailable(f"postgres connection lost during migrations: {exc}") from exc
        except psycopg.Error as exc:
            raise MigrationError(
                f"migration bookkeeping failed: {exc.diag.sqlstate or type(exc).__name__}"
            ) from exc


def migration_status(
    dsn: str, *, migrations: Iterable[Migration] | None = None
) -> list[tuple[Migration, AppliedMigration | None]]:
    """Each known migration with its ``schema_migrations`` record (None: pending).

    A record whose checksum differs from the file's marks an edited migration.
    """
    available = list(migrations) if migrations is not None else load_migrations()
    with _connect(dsn) as conn:
        applied = applied_migrations(conn)
    return [(m, applied.get(m.version)) for m in available]


def migrate(settings: Settings, *, lock_timeout_s: float = 120.0) -> MigrationReport:
    """The query role from the settings, then every pending packaged migration."""
    role = QueryRole.from_settings(settings)

    def prepare(conn: Conn) -> None:
        ensure_query_role(conn, role)

    return apply_migrations(settings.admin_dsn(), prepare=prepare, lock_timeout_s=lock_timeout_s)
