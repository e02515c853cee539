"""Local process supervisor: ``ragline services start|stop|status``.

Runs each service as its own detached process (``ragline run <name>``), with its log
in ``state_dir/logs`` and its pid in ``state_dir/run``, exactly as separate pods would
run on Kubernetes. For local use and tests; production uses the Helm chart.
"""

from __future__ import annotations

import asyncio
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from ragline.catalog import SERVICES
from ragline.config import Settings
from ragline.errors import ConfigError
from ragline.platform.stack.process import ProcessSpec, is_running, read_pid, spawn, terminate
from ragline.runtime.service_main import http_port, metrics_port

__all__ = ["ServiceState", "start", "status", "stop"]


@dataclass(frozen=True, kw_only=True)
class ServiceState:
    name: str
    pid: int | None
    alive: bool
    healthy: bool
    address: str
    # what a user talks to besides the health check: the query API, the connector's
    # change webhook
    endpoints: tuple[str, ...] = ()


def _spec(settings: Settings, name: str, env: Mapping[str, str] | None = None) -> ProcessSpec:
    return ProcessSpec(
        argv=(sys.executable, "-m", "ragline.cli", "run", name),
        log=settings.state_dir / "logs" / f"svc-{name}.log",
        pidfile=settings.state_dir / "run" / f"svc-{name}.pid",
        env=env,
    )


def _pid(settings: Settings, name: str) -> int | None:
    return read_pid(_spec(settings, name).pidfile)


def _alive(pid: int | None) -> bool:
    return is_running(pid, expect="python")


def _health_url(settings: Settings, name: str) -> str:
    if name == "query":
        return f"http://127.0.0.1:{http_port(name, settings)}/healthz"
    return f"http://127.0.0.1:{metrics_port(name, settings)}/healthz"


def _endpoints(settings: Settings, name: str) -> tuple[str, ...]:
    if name == "connector":
        return (f"webhook http://127.0.0.1:{http_port(name, settings)}/v1/changes",)
    if name == "query":
        return (f"api http://127.0.0.1:{http_port(name, settings)}/v1/search",)
    return ()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback only
            return bool(resp.status == 200)
    except OSError:
        return False


def start(
    settings: Settings,
    names: tuple[str, ...] = SERVICES,
    timeout: float = 120,
    *,
    env: Mapping[str, str] | None = None,
) -> None:
    """Start the services not running yet, with ``env`` on top of this environment (the
    local secrets), and wait until each is healthy."""
    for name in names:
        if not _alive(_pid(settings, name)):
            spawn(_spec(settings, name, env))
    deadline = time.monotonic() + timeout
    for name in names:
        url = _health_url(settings, name)
        while not _healthy(url):
            if not _alive(_pid(settings, name)):
                raise ConfigError(
                    f"service {name} exited during start-up; see {_spec(settings, name).log}"
                )
            if time.monotonic() > deadline:
                raise ConfigError(f"service {name} not healthy after {timeout:.0f}s")
            time.sleep(0.5)


def stop(settings: Settings, names: tuple[str, ...] = SERVICES, timeout: float = 60) -> None:
    """SIGTERM every service at once (graceful), SIGKILL what is left after ``timeout``."""

    async def _stop_all() -> None:
        pids = [p for p in (_pid(settings, n) for n in names) if _alive(p)]
        await asyncio.gather(*(terminate(p, timeout_s=timeout) for p in pids if p is not None))

    asyncio.run(_stop_all())
    for name in names:
        _spec(settings, name).pidfile.unlink(missing_ok=True)


def status(settings: Settings) -> list[ServiceState]:
    states = []
    for name in SERVICES:
        pid = _pid(settings, name)
        alive = _alive(pid)
        url = _health_url(settings, name)
        states.append(
            ServiceState(
                name=name,
                pid=pid if alive else None,
                alive=alive,
                healthy=alive and _healthy(url),
                address=url,
                endpoints=_endpoints(settings, name),
            )
        )
    return states
