"""Running detection off the event loop: in a thread, or in a pool of worker processes.

``workers=0`` runs the detectors in this process via ``asyncio.to_thread`` (enough for
the default policy, which needs no NER). ``workers>=1`` starts that many processes
(``spawn``: no forked copies of loaded models or threads), each loading its detectors
once in its initializer; documents run in parallel across workers, and a document larger
than ``split_bytes`` is split at item boundaries so one big file uses every worker.
Detection is per item, so the split does not change the result.

``deadline_s`` bounds one document's detection: the detectors stop cooperatively at the
deadline (``DetectResult.timed_out``), and the runner stops waiting ``grace_s`` later
even if a detector is stuck inside one library call (its thread then finishes on its own
while the stage moves on; nothing holds a lock other documents need).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ragline.errors import TransientError
from ragline.scanning.engine import Detectors, EngineConfig
from ragline.scanning.model import DetectPlan, DetectResult

__all__ = ["DetectionRunner", "split_items"]

_WORKER: Detectors | None = None


def _init_worker(config: EngineConfig) -> None:
    global _WORKER
    _WORKER = Detectors(config)
    _WORKER.load()


def _worker_detect(
    items: Sequence[str], plan: DetectPlan, deadline: float | None = None
) -> DetectResult:
    assert _WORKER is not None, "worker initializer did not run"
    # CLOCK_MONOTONIC is system-wide on Linux: the parent's deadline holds here too
    return _WORKER.detect(items, plan, deadline=deadline)


def _worker_ping() -> int:
    return os.getpid()


def split_items(items: Sequence[str], parts: int) -> list[tuple[int, list[str]]]:
    """``(first item index, items)`` groups of roughly equal size, in order."""
    total = sum(len(t) for t in items)
    if parts <= 1 or len(items) <= 1:
        return [(0, list(items))]
    target = total / parts
    groups: list[tuple[int, list[str]]] = []
    cur: list[str] = []
    first = 0
    size = 0
    for i, t in enumerate(items):
        if cur and size + len(t) > target and len(groups) < parts - 1:
            groups.append((first, cur))
            cur, first, size = [], i, 0
        cur.append(t)
        size += len(t)
    groups.append((first, cur))
    return groups


class DetectionRunner:
    def __init__(
        self,
        config: EngineConfig,
        *,
        workers: int = 0,
        split_bytes: int = 65536,
        detectors: Detectors | None = None,
    ) -> None:
        """``detectors``: already loaded in-process detectors to share (tests, CLI)."""
        self.config = config
        self.workers = workers
        self.split_bytes = split_bytes
        self._shared = detectors
        self._local: Detectors | None = None
        self._pool: ProcessPoolExecutor | None = None

    async def start(self) -> None:
        if self.workers <= 0:
            self._local = self._shared or Detectors(self.config)
            await asyncio.to_thread(self._local.load)
            return
        self._pool = self._new_pool()
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(self._pool, _worker_ping) for _ in range(self.workers))
        )

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self.config,),
        )

    async def stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._local = None

    async def detect(
        self,
        items: Sequence[str],
        plan: DetectPlan,
        *,
        deadline_s: float | None = None,
        grace_s: float = 5.0,
    ) -> DetectResult:
        """Findings for ``items``; with ``deadline_s`` a result with ``timed_out`` set once
        that many seconds have passed (never an exception for a slow document)."""
        if deadline_s is None:
            return await self._detect(items, plan, None)
        deadline = time.monotonic() + deadline_s
        try:
            return await asyncio.wait_for(
                self._detect(items, plan, deadline), timeout=deadline_s + grace_s
            )
        except TimeoutError:
            return DetectResult(timed_out=True)

    async def _detect(
        self, items: Sequence[str], plan: DetectPlan, deadline: float | None
    ) -> DetectResult:
        if self._pool is None:
            if self._local is None:
                await self.start()
            if self._local is not None:
                local = self._local
                return await asyncio.to_thread(lambda: local.detect(items, plan, deadline=deadline))
        assert self._pool is not None
        pool = self._pool
        n_chars = sum(len(t) for t in items)
        parts = self.workers if n_chars > self.split_bytes else 1
        groups = split_items(items, parts)
        loop = asyncio.get_running_loop()
        try:
            results = await asyncio.gather(
                *(loop.run_in_executor(pool, _worker_detect, g, plan, deadline) for _, g in groups)
            )
        except BrokenProcessPool as exc:
            pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
            raise TransientError("scanner worker process died; pool restarted") from exc
        merged = DetectResult()
        for (first, _), res in zip(groups, results, strict=True):
            merged.merge(res, item_offset=first)
        return merged
