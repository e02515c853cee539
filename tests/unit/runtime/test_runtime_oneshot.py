"""The one-shot process runner shared by the parser and the chunker (runtime/oneshot.py):
results and errors cross the process boundary intact, hostile payloads too, the time
bound and the memory cap end the process with a typed ``WorkLimit``, and nothing is
left running afterwards. Every job is a stdlib function (pickled by name)."""

from __future__ import annotations

import asyncio
import multiprocessing
import operator
import platform
import time

import pytest

from ragline.runtime.oneshot import WorkLimit, release_memory, run_once, shutdown, spawn_pool


def _alive() -> set[int]:
    return {p.pid for p in multiprocessing.active_children()}


async def test_results_errors_and_hostile_payloads_cross_intact() -> None:
    before = _alive()
    wide = ",".join(f"c{i}" for i in range(100_000))  # a 100k-column header line
    line = "x" * (20 * 2**20)  # a 20 MB single line
    hostile = "a\x00b\ud800c\udfff\u200b" + wide  # NUL, lone surrogates, zero-width
    # one process per call: a payload and its result go through pickling both ways
    assert await run_once(operator.add, hostile, line, timeout_s=120) == hostile + line
    with pytest.raises(ValueError, match="invalid literal"):  # fn's own error, re-raised
        await run_once(int, "not a number", timeout_s=120)
    assert not _alive() - before  # each process exited with its job


async def test_the_time_bound_kills_the_process() -> None:
    before = _alive()
    started = time.monotonic()
    with pytest.raises(WorkLimit) as info:
        await run_once(time.sleep, 600, timeout_s=1.0)
    assert info.value.limit == "timeout"
    assert "1s" in info.value.detail
    assert time.monotonic() - started < 120  # not the 600 s of the job
    assert not _alive() - before


async def test_the_memory_cap_is_a_work_limit() -> None:
    with pytest.raises(WorkLimit) as info:
        await run_once(bytearray, 4 * 2**30, timeout_s=120, memory_mb=512)
    assert info.value.limit == "memory"


@pytest.mark.parametrize("when", ["starting", "running"])
async def test_cancelling_the_caller_ends_the_process(when: str) -> None:
    before = _alive()
    task = asyncio.create_task(run_once(time.sleep, 600, timeout_s=900))
    await asyncio.sleep(0)  # "starting": the process is being spawned
    for _ in range(600 if when == "running" else 0):  # until the process exists
        if _alive() - before:
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(40):  # no process shows up late either (a pool still being spawned)
        assert not _alive() - before
        await asyncio.sleep(0.05)


def test_pools_are_capped_and_shut_down() -> None:
    pool = spawn_pool(1, memory_mb=512, max_tasks=1)
    try:
        with pytest.raises(MemoryError):
            pool.apply(bytearray, (4 * 2**30,))
        assert pool.apply(len, ("abc",)) == 3  # the worker was replaced (max_tasks=1)
    finally:
        shutdown(pool)


def test_release_memory_trims_the_heap_on_glibc() -> None:
    junk = [bytes(1000) for _ in range(100_000)]
    del junk
    # glibc (every image we ship): the trim runs; elsewhere it is a no-op (False)
    assert release_memory() is (platform.libc_ver()[0] == "glibc")
