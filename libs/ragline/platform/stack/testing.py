"""Helpers for tests that run against the real stack: free ports, the environment of a
throw-away stack, unique tenant ids, and a service started as its own process
(``python -m ragline.cli run <name>``) with its log, /metrics wait and signals.
Used by tests/conftest.py; importable by any test.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "CLEARED_ENV",
    "TEST_STACK_PREFIX",
    "ServiceProcess",
    "free_port",
    "indexed_count",
    "make_test_stack_dir",
    "patched_environ",
    "reap_stale_test_stacks",
    "stack_env",
    "stop_all",
    "unique_tenant",
    "wait_indexed",
]

# variables that would point a test stack at someone else's servers
CLEARED_ENV = ("RAGLINE_PG_DSN", "RAGLINE_PG_QUERY_DSN")
TEST_STACK_PREFIX = "ragline-stack-"
_OWNER_FILE = "owner.pid"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def unique_tenant(prefix: str = "t") -> str:
    """A tenant id no other test uses, so tests sharing one stack never see each other."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def stack_env(state_dir: Path) -> dict[str, str]:
    """``RAGLINE_*`` variables for a private stack under ``state_dir`` on free ports."""
    return {
        "RAGLINE_STATE_DIR": str(state_dir),
        "RAGLINE_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}",
        "RAGLINE_OPENSEARCH_URL": f"http://127.0.0.1:{free_port()}",
        "RAGLINE_STACK_COMPONENTS": "postgres,kafka,opensearch",
    }


async def indexed_count(dsn: str, tenant: str) -> int:
    """Documents of ``tenant`` indexed in both stores (``os_revision = revision``)."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM documents WHERE tenant_id = %s AND status = 'indexed'"
            " AND os_revision = revision",
            (tenant,),
        )
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def wait_indexed(
    dsn: str, tenant: str, at_least: int, timeout_s: float, procs: Iterable[ServiceProcess]
) -> int:
    """Poll ``indexed_count`` until ``at_least`` or the timeout; fails fast, with its log,
    when one of ``procs`` died."""
    procs = tuple(procs)
    deadline = time.monotonic() + timeout_s
    while True:
        n = await indexed_count(dsn, tenant)
        if n >= at_least or time.monotonic() > deadline:
            return n
        for p in procs:
            if not p.running():
                raise RuntimeError(f"{p.name} died:\n{p.log()[-3000:]}")
        await asyncio.sleep(0.2)


class ServiceProcess:
    """One ``ragline run <name>`` subprocess; stdout and stderr go to ``log_path``."""

    def __init__(
        self,
        name: str,
        *,
        env: Mapping[str, str],
        log_path: Path,
        metrics_port: int,
        http_port: int,
        cwd: Path | None = None,
        argv: tuple[str, ...] | None = None,
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.metrics_port = metrics_port
        self.http_port = http_port
        self.argv = argv or (sys.executable, "-m", "ragline.cli", "run", name)
        full_env = dict(env)
        full_env["RAGLINE_METRICS_PORT"] = str(metrics_port)
        full_env["RAGLINE_HTTP_PORT"] = str(http_port)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                env=full_env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def running(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        """Everything the service wrote so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def metrics(self, timeout_s: float = 2.0) -> str:
        """The text of /metrics (raises ``OSError`` when it does not answer)."""
        with urllib.request.urlopen(self.metrics_url, timeout=timeout_s) as resp:  # noqa: S310
            return str(resp.read().decode())

    def wait_metrics(self, timeout_s: float = 60.0) -> str:
        """Block until /metrics answers; fails fast, with the log, if the process exits."""
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.running():
                raise RuntimeError(
                    f"service {self.name} exited with {self.returncode} before serving "
                    f"/metrics; log {self.log_path}:\n{self.log()[-4000:]}"
                )
            try:
                return self.metrics()
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"service {self.name}: no /metrics on port {self.metrics_port} within "
                        f"{timeout_s:.0f} s; log {self.log_path}:\n{self.log()[-4000:]}"
                    ) from None
                time.sleep(0.2)

    async def wait_metrics_async(self, timeout_s: float = 60.0) -> str:
        return await asyncio.to_thread(self.wait_metrics, timeout_s)

    def wait_ready(self, path: str = "/readyz", timeout_s: float = 300.0) -> None:
        """Block until ``GET <http_url><path>`` answers 200 (an HTTP service such as query
        or the connector's webhook); fails fast, with the log, if the process exits."""
        url = f"{self.http_url}{path}"
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.running():
                raise RuntimeError(
                    f"service {self.name} exited with {self.returncode} before {path} "
                    f"answered; log {self.log_path}:\n{self.log()[-4000:]}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310
                    if resp.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"service {self.name}: {url} not ready within {timeout_s:.0f} s; "
                    f"log {self.log_path}:\n{self.log()[-4000:]}"
                )
            time.sleep(0.3)

    async def wait_ready_async(self, path: str = "/readyz", timeout_s: float = 300.0) -> None:
        await asyncio.to_thread(self.wait_ready, path, timeout_s)

    def send_signal(self, sig: signal.Signals) -> None:
        if self.running():
            self.proc.send_signal(sig)

    def wait(self, timeout_s: float = 30.0) -> int:
        """The exit code; raises ``subprocess.TimeoutExpired`` when still running."""
        return self.proc.wait(timeout=timeout_s)

    def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then wait for a graceful exit; returns the exit code."""
        self.send_signal(signal.SIGTERM)
        return self.wait(timeout_s)

    async def terminate_async(self, timeout_s: float = 30.0) -> int:
        return await asyncio.to_thread(self.terminate, timeout_s)

    def kill(self) -> int:
        """SIGKILL: the crash case. Returns the exit code (-9)."""
        self.send_signal(signal.SIGKILL)
        return self.proc.wait(timeout=10)

    def cleanup(self) -> None:
        """End the process whatever its state (fixture teardown)."""
        if self.running():
            self.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def stop_all(procs: Iterable[ServiceProcess], timeout_s: float = 10.0) -> None:
    """``cleanup`` of many processes at once: SIGTERM to every one first, then the waits
    (one by one, each service's graceful stop of a few seconds added up: the session's
    eight pipeline services took ~20 s), SIGKILL for what is still running after
    ``timeout_s``."""
    procs = [p for p in procs if p.running()]
    for p in procs:
        p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for p in procs:
        try:
            p.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()


@contextmanager
def patched_environ(updates: Mapping[str, str], remove: Iterable[str] = ()) -> Iterator[None]:
    """Set ``updates`` and unset ``remove`` in ``os.environ`` (inherited by subprocesses),
    restoring the previous values on exit."""
    keys = (*updates, *remove)
    saved = {k: os.environ.get(k) for k in keys}
    for k in remove:
        os.environ.pop(k, None)
    os.environ.update(updates)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def make_test_stack_dir() -> Path:
    """A fresh directory for a test session's stack, outside pytest's basetemp (which a
    concurrent pytest run prunes, deleting a live Postgres data directory), marked with
    the owning process so a later session can clean up after a killed one."""
    base = Path(tempfile.mkdtemp(prefix=TEST_STACK_PREFIX))
    (base / _OWNER_FILE).write_text(f"{os.getpid()}\n")
    return base


async def reap_stale_test_stacks(root: Path | None = None) -> list[Path]:
    """Stop the servers of test stacks whose owning process is gone, delete their
    directories, and return them. Stacks of live sessions are never touched."""
    from ragline.config import Settings
    from ragline.platform.stack.manager import StackManager
    from ragline.platform.stack.process import is_running, read_pid
    from ragline.platform.stack.settings import Component, StackSettings

    reaped: list[Path] = []
    for base in sorted((root or Path(tempfile.gettempdir())).glob(f"{TEST_STACK_PREFIX}*")):
        owner = read_pid(base / _OWNER_FILE)
        if owner is None or is_running(owner):
            continue
        settings = Settings(state_dir=base / "state", pg_dsn=None)
        await StackManager(settings, StackSettings(components=frozenset(Component))).down()
        shutil.rmtree(base, ignore_errors=True)
        reaped.append(base)
    return reaped
