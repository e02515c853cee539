"""Local process supervisor: ``ragline services start|stop|status``.

Runs each service as its own detached process (``ragline run <name>``), with its log
in ``state_dir/logs`` and its pid in ``state_dir/run``, exactly as separate pods would
run on Kubernetes. For local use and tests; production uses the Helm chart.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ragline.errors import ConfigError
from ragline.runtime.service_main import SERVICES, http_port, load_service, metrics_port
from ragline.runtime.settings import Settings

__all__ = ["ServiceState", "built_services", "start", "status", "stop"]


@dataclass(frozen=True, kw_only=True)
class ServiceState:
    name: str
    built: bool
    pid: int | None
    alive: bool
    healthy: bool
    address: str
    note: str = ""


def _pidfile(settings: Settings, name: str) -> Path:
    return settings.state_dir / "run" / f"svc-{name}.pid"


def _logfile(settings: Settings, name: str) -> Path:
    return settings.state_dir / "logs" / f"svc-{name}.log"


def _pid(settings: Settings, name: str) -> int | None:
    try:
        return int(_pidfile(settings, name).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _health_url(settings: Settings, name: str) -> str:
    if name == "query":
        return f"http://127.0.0.1:{http_port(name, settings)}/healthz"
    return f"http://127.0.0.1:{metrics_port(name, settings)}/metrics"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback only
            return bool(resp.status == 200)
    except OSError:
        return False


def built_services() -> dict[str, str | None]:
    """Service name -> None if built, else why not."""
    out: dict[str, str | None] = {}
    for name in SERVICES:
        try:
            load_service(name)
            out[name] = None
        except ConfigError as exc:
            out[name] = str(exc)
    return out


def start(settings: Settings, names: tuple[str, ...] = SERVICES, timeout: float = 120) -> None:
    (settings.state_dir / "run").mkdir(parents=True, exist_ok=True)
    (settings.state_dir / "logs").mkdir(parents=True, exist_ok=True)
    for name in names:
        if _alive(_pid(settings, name)):
            continue
        log = _logfile(settings, name).open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragline.cli", "run", name],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=os.environ.copy(),
        )
        _pidfile(settings, name).write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    for name in names:
        url = _health_url(settings, name)
        while not _healthy(url):
            if not _alive(_pid(settings, name)):
                raise ConfigError(
                    f"service {name} exited during start-up; see {_logfile(settings, name)}"
                )
            if time.monotonic() > deadline:
                raise ConfigError(f"service {name} not healthy after {timeout:.0f}s")
            time.sleep(0.5)


def stop(settings: Settings, names: tuple[str, ...] = SERVICES, timeout: float = 60) -> None:
    for name in names:
        pid = _pid(settings, name)
        if _alive(pid):
            assert pid is not None
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for name in names:
        pid = _pid(settings, name)
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
        _pidfile(settings, name).unlink(missing_ok=True)


def status(settings: Settings) -> list[ServiceState]:
    built = built_services()
    states = []
    for name in SERVICES:
        pid = _pid(settings, name)
        alive = _alive(pid)
        url = _health_url(settings, name)
        states.append(
            ServiceState(
                name=name,
                built=built[name] is None,
                pid=pid if alive else None,
                alive=alive,
                healthy=alive and _healthy(url),
                address=url,
                note=built[name] or "",
            )
        )
    return states
