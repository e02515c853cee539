"""CPU priority per lane: bulk work runs in threads the kernel schedules after
interactive work (docs/adr/0012-priority-lanes.md, session-3 amendment).

The lane gate (``runtime/lanes.py``) only decides which *batch* starts; once a bulk batch
runs, its CPU work competes as an equal with every interactive step. Under a backfill
the embedder's bulk model calls take all cores, and an interactive edit's parse, scan,
chunk, enrich, embed and index steps each get a fraction of a core.

The runtime therefore marks the lane of the work in hand (``lane_context``: the consumer
sets it around each record batch, a contextvar, so it follows the task and everything it
awaits) and installs a ``LaneExecutor`` as the event loop's default executor: every
``asyncio.to_thread`` / ``run_in_executor(None, ...)`` a stage makes for bulk work runs
in the bulk thread pool, whose threads raise their *nice value* by ``bulk_nice`` (Linux
keeps it per thread; threads they start inherit it, so a model runtime's worker pool
built from a bulk thread is bulk too). Stages need no change beyond doing their CPU
work off the event loop, which they already do. The scheduler is work-conserving: bulk
gets every cycle interactive work does not want, so a backfill on an otherwise idle
machine loses nothing, while an interactive step preempts it. Raising one's own nice
value needs no privilege.

``bulk_nice`` 0 turns it off; on a platform without per-thread priorities (not Linux)
the bulk threads run at normal priority.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from ragline.events import BULK, INTERACTIVE, Lane

__all__ = [
    "MAX_NICE",
    "LaneExecutor",
    "current_lane",
    "install_lane_executor",
    "lane_context",
    "lower_thread_priority",
]

_log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_NICE = 19

_LANE: ContextVar[Lane] = ContextVar("ragline_lane", default=INTERACTIVE)


def current_lane() -> Lane:
    """The lane of the work this task is doing (interactive unless marked)."""
    return _LANE.get()


@contextmanager
def lane_context(lane: Lane) -> Iterator[None]:
    """Mark the work done inside (and the threads it hands work to) as ``lane``'s."""
    token = _LANE.set(BULK if lane == BULK else INTERACTIVE)
    try:
        yield
    finally:
        _LANE.reset(token)


def lower_thread_priority(increment: int) -> bool:
    """Raise the calling thread's nice value by ``increment`` (capped at 19). True when
    the kernel applied it; False when off or on platforms without per-thread priorities."""
    if increment <= 0 or not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(MAX_NICE, current + increment))
    except OSError as exc:  # a sandbox that forbids it: run at normal priority
        _log.warning("cannot lower a bulk thread's priority", extra={"fields": {"error": str(exc)}})
        return False
    return True


class LaneExecutor(ThreadPoolExecutor):
    """A default executor with a second pool for bulk work: ``submit`` from a task
    marked bulk (``lane_context``) runs in threads ``bulk_nice`` lower."""

    def __init__(self, bulk_nice: int = 10, max_workers: int | None = None) -> None:
        if not 0 <= bulk_nice <= MAX_NICE:
            raise ValueError(f"bulk_nice must be within 0..{MAX_NICE}, not {bulk_nice}")
        super().__init__(max_workers, thread_name_prefix="interactive")
        self.bulk_nice = bulk_nice
        self.bulk = ThreadPoolExecutor(
            max_workers,
            thread_name_prefix="bulk",
            initializer=lower_thread_priority,
            initargs=(bulk_nice,),
        )

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if _LANE.get() == BULK:
            return self.bulk.submit(fn, *args, **kwargs)
        return super().submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.bulk.shutdown(wait, cancel_futures=cancel_futures)
        super().shutdown(wait, cancel_futures=cancel_futures)


def install_lane_executor(loop: asyncio.AbstractEventLoop, bulk_nice: int) -> LaneExecutor | None:
    """Make ``loop``'s default executor lane-aware (None when ``bulk_nice`` is 0)."""
    if bulk_nice <= 0:
        return None
    executor = LaneExecutor(bulk_nice)
    loop.set_default_executor(executor)
    return executor
