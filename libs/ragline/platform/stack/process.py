"""Server processes of the local stack: start them in the background with their output in
a log file and their pid in a pid file, tell whether a pid is still one of ours, stop them
with an escalating series of signals.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = [
    "ProcessSpec",
    "exit_code",
    "is_running",
    "read_pid",
    "spawn",
    "terminate",
    "wait_gone",
]

# Popen objects of the servers this process started: kept so they can be reaped (no
# zombies in long test sessions) and so their exit code can be reported.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True, kw_only=True)
class ProcessSpec:
    argv: tuple[str, ...]
    log: Path
    pidfile: Path
    # True: a new session, so the server outlives the CLI that started it;
    # False (tests): it stays in the caller's process group and dies with it
    detached: bool = True
    # variables set for the process on top of this process's environment
    env: Mapping[str, str] | None = None


def spawn(spec: ProcessSpec) -> int:
    """Start ``spec.argv`` in the background; returns its pid (also written to the pid file)."""
    spec.log.parent.mkdir(parents=True, exist_ok=True)
    spec.pidfile.parent.mkdir(parents=True, exist_ok=True)
    with spec.log.open("ab") as log:
        proc = subprocess.Popen(
            spec.argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=spec.detached,
            close_fds=True,
            env={**os.environ, **spec.env} if spec.env else None,
        )
    _CHILDREN[proc.pid] = proc
    tmp = spec.pidfile.with_suffix(".tmp")
    tmp.write_text(f"{proc.pid}\n")
    tmp.replace(spec.pidfile)
    return proc.pid


def read_pid(pidfile: Path) -> int | None:
    try:
        text = pidfile.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def exit_code(pid: int) -> int | None:
    """The exit code of a server this process started, once it has exited."""
    proc = _CHILDREN.get(pid)
    return None if proc is None else proc.poll()


def is_running(pid: int | None, *, expect: str | None = None) -> bool:
    """Whether ``pid`` is alive (not a zombie) and, with ``expect``, whether its executable
    name or first argument contains ``expect`` (a recycled pid is not ours)."""
    if pid is None or pid <= 0:
        return False
    proc = _CHILDREN.get(pid)
    if proc is not None and proc.poll() is not None:
        return False
    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        if expect is None:
            return True
        cmd = p.cmdline()
        return expect in p.name() or (bool(cmd) and expect in os.path.basename(cmd[0]))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


async def wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_running(pid):
            return True
        await asyncio.sleep(0.05)
    return not is_running(pid)


async def terminate(
    pid: int,
    *,
    signals: Sequence[signal.Signals] = (signal.SIGTERM,),
    timeout_s: float = 15.0,
) -> bool:
    """Send each of ``signals`` in turn, waiting a share of ``timeout_s`` after each, then
    SIGKILL. Returns True when the process is gone."""
    share = timeout_s / max(len(signals), 1)
    for sig in (*signals, signal.SIGKILL):
        if not is_running(pid):
            break
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        if await wait_gone(pid, share if sig != signal.SIGKILL else 5.0):
            break
    gone = not is_running(pid)
    if gone and pid in _CHILDREN:
        child = _CHILDREN.pop(pid)
        try:
            child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:  # it looked gone (a JVM whose leader thread
            child.kill()  # exited first shows as a zombie) but was still exiting
            child.wait(timeout=5)
    return gone
