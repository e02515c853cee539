"""What every stack component offers (start, stop, status, a protocol-level probe), the
result types, and the two generic shapes: a local server process and an external server.
"""

from __future__ import annotations

import asyncio
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragline.platform.stack import process
from ragline.platform.stack.errors import StackError
from ragline.platform.stack.settings import Component

__all__ = [
    "ComponentStatus",
    "ExternalServer",
    "Health",
    "LocalOptions",
    "LocalProcessServer",
    "Probe",
    "Server",
    "ServerGroup",
    "StartResult",
    "StopResult",
    "read_cluster_file",
    "write_cluster_file",
]


CLUSTER_FILE = "cluster.json"


def read_cluster_file(root: Path, component: str) -> dict[str, Any] | None:
    """The cluster layout kept in ``root`` (ids and ports picked once), None if none was
    kept; an unreadable file is a StackError naming the component."""
    path = root / CLUSTER_FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StackError(component, f"cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise StackError(component, f"cannot read {path}: not an object")
    return raw


def write_cluster_file(root: Path, body: dict[str, Any]) -> None:
    """Keep the layout in ``root`` (written aside, then renamed: never half a file)."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f"{CLUSTER_FILE}.tmp"
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    tmp.replace(root / CLUSTER_FILE)


@dataclass(frozen=True, kw_only=True)
class Health:
    ok: bool
    detail: str = ""


# asks a server, over its own protocol, whether it answers within a timeout
Probe = Callable[[float], Awaitable[Health]]


@dataclass(frozen=True, kw_only=True)
class ComponentStatus:
    component: Component
    managed: bool
    address: str
    pid: int | None
    health: Health
    log: Path | None


@dataclass(frozen=True, kw_only=True)
class StartResult:
    component: Component
    # "started" | "running" (was already up) | "external"
    action: str
    pid: int | None
    seconds: float


@dataclass(frozen=True, kw_only=True)
class StopResult:
    component: Component
    # "stopped" | "not running" | "external" | "failed"
    action: str
    pid: int | None


class Server(ABC):
    component: Component
    managed: bool
    address: str
    log: Path | None = None

    def __init__(self, probe: Probe, *, probe_timeout_s: float, start_timeout_s: float) -> None:
        self.probe = probe
        self.probe_timeout_s = probe_timeout_s
        self.start_timeout_s = start_timeout_s

    @abstractmethod
    async def start(self) -> StartResult: ...

    @abstractmethod
    async def stop(self) -> StopResult: ...

    @abstractmethod
    def pid(self) -> int | None: ...

    async def status(self) -> ComponentStatus:
        health = await self.probe(self.probe_timeout_s)
        return ComponentStatus(
            component=self.component,
            managed=self.managed,
            address=self.address,
            pid=self.pid(),
            health=health,
            log=self.log,
        )

    async def wait_healthy(self, *, pid: int | None = None) -> None:
        """Poll the probe until it answers; fail early when ``pid`` dies."""
        deadline = time.monotonic() + self.start_timeout_s
        health = Health(ok=False, detail="not probed")
        while time.monotonic() < deadline:
            health = await self.probe(self.probe_timeout_s)
            if health.ok:
                return
            if pid is not None and not process.is_running(pid):
                code = process.exit_code(pid)
                raise StackError(
                    self.component,
                    f"exited during start-up (exit code {code}) before answering at {self.address}",
                    log=self.log,
                )
            await asyncio.sleep(0.2)
        raise StackError(
            self.component,
            f"did not answer at {self.address} within {self.start_timeout_s:.0f} s "
            f"({health.detail})",
            log=self.log,
        )


class ExternalServer(Server):
    """A server this stack does not run: it only waits for it and reports on it."""

    managed = False

    def __init__(
        self,
        component: Component,
        address: str,
        probe: Probe,
        *,
        probe_timeout_s: float,
        start_timeout_s: float,
    ) -> None:
        super().__init__(probe, probe_timeout_s=probe_timeout_s, start_timeout_s=start_timeout_s)
        self.component = component
        self.address = address

    def pid(self) -> int | None:
        return None

    async def start(self) -> StartResult:
        t0 = time.monotonic()
        await self.wait_healthy()
        return StartResult(
            component=self.component, action="external", pid=None, seconds=time.monotonic() - t0
        )

    async def stop(self) -> StopResult:
        return StopResult(component=self.component, action="external", pid=None)


@dataclass(frozen=True, kw_only=True)
class LocalOptions:
    """How the stack runs one local server."""

    log: Path
    pidfile: Path
    detached: bool
    probe_timeout_s: float
    start_timeout_s: float
    stop_timeout_s: float


class LocalProcessServer(Server):
    """A server binary run in the background by the stack (the broker, OpenSearch)."""

    managed = True
    executable_name: str

    def __init__(self, probe: Probe, options: LocalOptions) -> None:
        super().__init__(
            probe,
            probe_timeout_s=options.probe_timeout_s,
            start_timeout_s=options.start_timeout_s,
        )
        self.options = options
        self.log = options.log
        self.pidfile = options.pidfile
        self.detached = options.detached
        self.stop_timeout_s = options.stop_timeout_s

    @abstractmethod
    def argv(self) -> tuple[str, ...]: ...

    def pid(self) -> int | None:
        pid = process.read_pid(self.pidfile)
        return pid if process.is_running(pid, expect=self.executable_name) else None

    async def start(self) -> StartResult:
        t0 = time.monotonic()
        pid = self.pid()
        if pid is not None:  # ours and alive: never start a second one
            await self.wait_healthy(pid=pid)
            return StartResult(
                component=self.component,
                action="running",
                pid=pid,
                seconds=time.monotonic() - t0,
            )
        self.pidfile.unlink(missing_ok=True)
        if (await self.probe(self.probe_timeout_s)).ok:
            raise StackError(
                self.component,
                f"something already answers at {self.address} but this stack did not start "
                f"it (no live pid in {self.pidfile}); stop it, pick another address, or "
                "leave this component out of RAGLINE_STACK_COMPONENTS to use it as external",
            )
        spec = process.ProcessSpec(
            argv=self.argv(), log=self.options.log, pidfile=self.pidfile, detached=self.detached
        )
        try:
            pid = process.spawn(spec)
        except OSError as exc:
            raise StackError(self.component, f"cannot execute {spec.argv[0]}: {exc}") from exc
        try:
            await self.wait_healthy(pid=pid)
        except BaseException:
            await process.terminate(pid, timeout_s=self.stop_timeout_s)
            self.pidfile.unlink(missing_ok=True)
            raise
        return StartResult(
            component=self.component, action="started", pid=pid, seconds=time.monotonic() - t0
        )

    async def stop(self) -> StopResult:
        pid = self.pid()
        if pid is None:
            self.pidfile.unlink(missing_ok=True)
            return StopResult(component=self.component, action="not running", pid=None)
        gone = await process.terminate(pid, timeout_s=self.stop_timeout_s)
        if gone:
            self.pidfile.unlink(missing_ok=True)
        return StopResult(component=self.component, action="stopped" if gone else "failed", pid=pid)


class ServerGroup(Server):
    """Several nodes on this host reported as one component: what they share prepared
    once (before they race for it), started together (a quorum, or the first election,
    needs its majority up), healthy once every node has joined, stopped together."""

    nodes: Sequence[Server]

    def pid(self) -> int | None:
        return self.nodes[0].pid()

    async def prepare(self) -> None:
        """Work done once before the nodes start (fetching jars, writing the layout)."""

    async def start(self) -> StartResult:
        t0 = time.monotonic()
        if any(n.pid() is None for n in self.nodes):
            await self.prepare()
        results = await asyncio.gather(*(n.start() for n in self.nodes), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await self.stop()
            raise errors[0]
        await self.wait_healthy()  # every node joined
        actions = {r.action for r in results if isinstance(r, StartResult)}
        return StartResult(
            component=self.component,
            action="running" if actions == {"running"} else "started",
            pid=self.pid(),
            seconds=time.monotonic() - t0,
        )

    async def stop(self) -> StopResult:
        pid = self.pid()
        results = await asyncio.gather(*(n.stop() for n in self.nodes))
        actions = {r.action for r in results}
        action = (
            "failed"
            if "failed" in actions
            else ("stopped" if "stopped" in actions else "not running")
        )
        return StopResult(component=self.component, action=action, pid=pid)
