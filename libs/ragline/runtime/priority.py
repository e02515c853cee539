"""CPU priority per lane: bulk work runs in threads the kernel schedules after
interactive work (docs/adr/0012-priority-lanes.md, amendment 2).

The lane gate (``runtime/lanes.py``) only decides which *batch* starts; once a bulk batch
runs, its CPU work competes as an equal with every interactive step of every service on
the machine. Under a backfill the embedder's bulk model calls take all cores, and an
interactive edit's parse, chunk, enrich, embed and index steps each get a fraction of a
core. ``LanePriority`` runs a lane's blocking work in that lane's own worker threads and
raises the *nice value* of the bulk threads (Linux: per thread, inherited by threads
they create, so a model runtime's worker pool built from a bulk thread is bulk too).
The scheduler is work-conserving: bulk still gets every cycle interactive work does not
want, so backfill throughput is unchanged on an otherwise idle machine, while an
interactive step preempts it at once. Raising one's own nice value needs no privilege.

``bulk_nice`` 0 turns it off; on a platform without per-thread priorities (not Linux)
the bulk threads run at normal priority and ``applied`` says so.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from ragline.events import BULK, INTERACTIVE, Lane

__all__ = ["LanePriority", "lower_thread_priority"]

_log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

MAX_NICE = 19


def lower_thread_priority(increment: int) -> bool:
    """Raise the calling thread's nice value by ``increment`` (capped at 19). True when
    the kernel applied it; False on platforms without per-thread priorities."""
    if increment <= 0:
        return False
    if not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(MAX_NICE, current + increment))
    except OSError as exc:  # a sandbox that forbids it: run at normal priority
        _log.warning("cannot lower a bulk thread's priority", extra={"fields": {"error": str(exc)}})
        return False
    return True


class LanePriority:
    """One small thread pool per lane; the bulk pool's threads run ``bulk_nice`` lower.

    ``run(lane, fn, *args)`` awaits ``fn(*args)`` in that lane's pool. Use it for the
    CPU-heavy blocking calls of a stage (model calls, parsing); build anything that
    spawns its own worker threads (an ONNX Runtime session) inside ``run(BULK, ...)`` so
    its workers inherit the bulk priority."""

    def __init__(self, bulk_nice: int = 10, *, workers: int = 1, name: str = "stage") -> None:
        if not 0 <= bulk_nice <= MAX_NICE:
            raise ValueError(f"bulk_nice must be within 0..{MAX_NICE}, not {bulk_nice}")
        self.bulk_nice = bulk_nice
        self.applied = False  # set by the first bulk thread: the kernel took the nice value
        self._pools: dict[Lane, ThreadPoolExecutor] = {
            INTERACTIVE: ThreadPoolExecutor(workers, thread_name_prefix=f"{name}-interactive"),
            BULK: ThreadPoolExecutor(
                workers, thread_name_prefix=f"{name}-bulk", initializer=self._init_bulk
            ),
        }

    def _init_bulk(self) -> None:
        if lower_thread_priority(self.bulk_nice):
            self.applied = True

    async def run(self, lane: Lane, fn: Callable[P, T], *args: P.args, **kw: P.kwargs) -> T:
        pool = self._pools[BULK if lane == BULK else INTERACTIVE]
        call = functools.partial(fn, *args, **kw)
        return await asyncio.get_running_loop().run_in_executor(pool, call)

    def close(self) -> None:
        for pool in self._pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
