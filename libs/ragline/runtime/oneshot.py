"""Work in processes of the stage's own: a pool of workers, or one process per job that
exits afterwards (issue 18: no document delays the others; docs/lanes.md).

A heavy document is handled in a **one-shot process** (``run_once``): it never occupies
a pool worker nor the interpreter of the service, so the documents behind it are not
slowed by its CPU work, and the memory it took is given back to the system when the
process exits. Both ``run_once`` and the long-lived pools (``spawn_pool``) enforce:

* a **time bound**: past ``timeout_s`` the process is killed and ``WorkLimit``
  (``limit == "timeout"``) is raised; the stage turns it into a terminal status
  (a quarantine with its reason code), so a document holds its partition for at most
  that long;
* a **memory cap**: ``memory_mb`` is the worker's address-space limit; allocations past
  it raise ``MemoryError`` inside the worker, which ``run_once`` reports as ``WorkLimit``
  (``limit == "memory"``).

Workers are started with the ``spawn`` method (no fork of a process holding Kafka
clients and threads). The job is a module-level function (it is pickled by name) whose
arguments and result are picklable; exceptions whose ``__init__`` takes more than a
message do not survive pickling, so a job returns its expected failures as values.

``release_memory`` is the other half for long-lived processes: after a large item it
collects garbage and asks glibc to hand free heap pages back (``malloc_trim``), which it
otherwise keeps for later allocations (the RSS stays at the peak).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import multiprocessing
from collections.abc import Callable
from functools import cache
from multiprocessing.pool import Pool
from typing import Any, Literal, TypeVar

from ragline.errors import RaglineError

__all__ = [
    "WorkLimit",
    "limit_memory",
    "release_memory",
    "run_once",
    "shutdown",
    "spawn_pool",
    "submit",
]

T = TypeVar("T")


class WorkLimit(RaglineError):
    """A job exceeded its time bound or memory cap; its process was ended."""

    def __init__(self, limit: Literal["timeout", "memory"], detail: str) -> None:
        super().__init__(f"{limit}: {detail}")
        self.limit = limit
        self.detail = detail


def limit_memory(memory_mb: int) -> None:
    """Pool initializer: cap the worker's address space (0 = no cap)."""
    if memory_mb > 0:
        import resource

        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def spawn_pool(workers: int, *, memory_mb: int = 0, max_tasks: int | None = None) -> Pool:
    """A spawn-context pool of ``workers`` processes, each capped at ``memory_mb`` and
    replaced after ``max_tasks`` jobs (None: never). Blocking: call it in a thread."""
    ctx = multiprocessing.get_context("spawn")
    return ctx.Pool(
        workers, initializer=limit_memory, initargs=(memory_mb,), maxtasksperchild=max_tasks
    )


def shutdown(pool: Pool) -> None:
    """Kill the pool's processes and wait for them. Blocking: call it in a thread."""
    pool.terminate()
    pool.join()


def submit(pool: Pool, fn: Callable[..., T], args: tuple[Any, ...]) -> asyncio.Future[T]:
    """``fn(*args)`` in ``pool``, as a future of the running loop. The future may be
    failed from outside first (a pool restarted); a late result is then ignored."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()

    def ok(result: T) -> None:
        if not fut.done():
            fut.set_result(result)

    def err(exc: BaseException) -> None:
        if not fut.done():
            fut.set_exception(exc)

    # the pool calls these in its result thread: hand over to the loop
    pool.apply_async(
        fn,
        args,
        callback=lambda result: loop.call_soon_threadsafe(ok, result),
        error_callback=lambda exc: loop.call_soon_threadsafe(err, exc),
    )
    return fut


def _guarded(fn: Callable[..., T], args: tuple[Any, ...]) -> tuple[bool, T | None]:
    """Runs in the worker: a MemoryError (the cap) comes back as a value."""
    try:
        return True, fn(*args)
    except MemoryError:
        return False, None


async def run_once(fn: Callable[..., T], *args: Any, timeout_s: float, memory_mb: int = 0) -> T:
    """``fn(*args)`` in a process of its own that exits afterwards, within ``timeout_s``
    seconds (the process start included) and ``memory_mb`` of address space.

    Raises ``WorkLimit`` when a bound is exceeded; any other exception of ``fn`` is
    re-raised here (if it survives pickling). Cancelling the caller kills the process.
    """
    starting = asyncio.ensure_future(asyncio.to_thread(spawn_pool, 1, memory_mb=memory_mb))
    try:
        pool = await asyncio.shield(starting)
    except asyncio.CancelledError:  # cancelled while the process starts: end it too
        await asyncio.to_thread(shutdown, await starting)
        raise
    try:
        done, value = await asyncio.wait_for(submit(pool, _guarded, (fn, args)), timeout_s)
    except TimeoutError:
        raise WorkLimit("timeout", f"took longer than {timeout_s:g}s") from None
    finally:
        # terminate, not close: the job is done or abandoned, nothing is left to finish
        await asyncio.to_thread(shutdown, pool)
    if not done:
        raise WorkLimit("memory", f"exceeded the {memory_mb} MB memory limit")
    return value  # type: ignore[return-value]  # done: fn's result


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_memory() -> bool:
    """Give the memory a finished large item took back to the system: a full garbage
    collection, then glibc's ``malloc_trim(0)``, which returns the free pages of every
    heap (the RSS otherwise stays at the peak). True if the trim ran. Blocking (tens of
    milliseconds on a large heap): call it in a thread, after the item, not per item."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
