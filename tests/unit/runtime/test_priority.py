"""CPU priority per lane (runtime/priority.py): bulk threads run at a higher nice value,
threads they start inherit it, interactive threads and the caller are untouched; and the
embedder's bulk calls never hold up an interactive call (embedding/batcher.py)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.embedding.batcher import BatchEmbedder
from ragline.events import BULK, INTERACTIVE
from ragline.indexing.samples import enriched_event, pseudo_embedding
from ragline.runtime.lanes import LaneSettings, with_lane
from ragline.runtime.priority import (
    MAX_NICE,
    LaneExecutor,
    current_lane,
    install_lane_executor,
    lane_context,
    lower_thread_priority,
)

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _nice_of_child_thread() -> int:
    """The nice value of a thread started by the calling thread (a model runtime's pool)."""
    seen: list[int] = []
    t = threading.Thread(target=lambda: seen.append(_nice()))
    t.start()
    t.join()
    return seen[0]


async def _in_lane(lane: str, fn):  # type: ignore[no-untyped-def]
    with lane_context(lane):  # type: ignore[arg-type]
        return await asyncio.to_thread(fn)


@linux
async def test_bulk_threads_run_lower_and_pass_it_on_interactive_untouched() -> None:
    caller = _nice()
    loop = asyncio.get_running_loop()
    executor = install_lane_executor(loop, 7)
    assert executor is not None
    try:
        bulk = await _in_lane(BULK, _nice)
        inherited = await _in_lane(BULK, _nice_of_child_thread)
        interactive = await _in_lane(INTERACTIVE, _nice)
        unmarked = await asyncio.to_thread(_nice)
        # the mark follows the task into what it awaits, and ends with the block
        with lane_context(BULK):
            assert current_lane() == BULK
            nested = await asyncio.gather(asyncio.to_thread(_nice), asyncio.to_thread(_nice))
        assert current_lane() == INTERACTIVE
    finally:
        loop.set_default_executor(LaneExecutor(0))  # a fresh one: the test's loop goes on
        executor.shutdown(wait=True)
    assert bulk == min(MAX_NICE, caller + 7)
    assert inherited == bulk
    assert nested == [bulk, bulk]
    assert interactive == unmarked == caller
    assert _nice() == caller  # the event loop's thread is never touched


@linux
async def test_nice_zero_is_off() -> None:
    caller = _nice()
    assert install_lane_executor(asyncio.get_running_loop(), 0) is None
    executor = LaneExecutor(0)
    try:
        with lane_context(BULK):
            got = await asyncio.get_running_loop().run_in_executor(executor, _nice)
    finally:
        executor.shutdown()
    assert got == caller


@linux
def test_lowering_caps_at_19_and_only_the_calling_thread() -> None:
    caller = _nice()
    seen: list[tuple[bool, int]] = []

    def work() -> None:
        seen.append((lower_thread_priority(40), _nice()))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [(True, MAX_NICE)]
    assert _nice() == caller
    assert lower_thread_priority(0) is False


@given(st.integers().filter(lambda n: not 0 <= n <= MAX_NICE))
def test_out_of_range_nice_is_refused(n: int) -> None:
    with pytest.raises(ValueError, match="bulk_nice"):
        LaneExecutor(n)


def test_lane_setting_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LaneSettings().bulk_nice == 10
    monkeypatch.setenv("RAGLINE_LANES_BULK_NICE", "20")
    with pytest.raises(ValueError):
        LaneSettings()


class GateModel:
    """A stand-in model whose calls can be held (a long bulk call in progress)."""

    name = "gate-model"
    revision = "r1"
    dim = 8

    def __init__(self) -> None:
        self.release = threading.Event()
        self.release.set()
        self.entered = threading.Event()
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.entered.set()
        assert self.release.wait(30), "held call never released"
        return np.asarray([pseudo_embedding(t, self.dim) for t in texts], dtype=np.float32)


def _event(doc: str, lane: str = INTERACTIVE):  # type: ignore[no-untyped-def]
    ev = enriched_event(
        tenant_id="acme", document_id=f"wiki:{doc}", source_seq=1, texts=[f"{doc} text"]
    )
    return with_lane(ev, lane)  # type: ignore[arg-type]


async def test_an_interactive_call_does_not_wait_for_a_running_bulk_call() -> None:
    main, twin = GateModel(), GateModel()
    twin.release.clear()  # the bulk call holds until released
    batcher = BatchEmbedder(main, cache=None, bulk_embedder=twin)
    try:
        bulk = asyncio.create_task(batcher.embed_events([_event("b1", BULK), _event("b2", BULK)]))
        assert await asyncio.to_thread(twin.entered.wait, 30)
        (res,) = await asyncio.wait_for(batcher.embed_events([_event("i1")]), 30)
        assert not isinstance(res, BaseException)
        assert not bulk.done()  # the bulk call is still running: the edit went past it
        twin.release.set()
        out = await bulk
        assert all(not isinstance(r, BaseException) for r in out)
    finally:
        twin.release.set()
    assert (main.calls, twin.calls) == (1, 1)
    # both lanes give the same vector for the same text (one model, one revision)
    (a,) = await BatchEmbedder(main, cache=None).embed_events([_event("same")])
    (b,) = await BatchEmbedder(main, cache=None, bulk_embedder=twin).embed_events(
        [_event("same", BULK)]
    )
    assert not isinstance(a, BaseException) and not isinstance(b, BaseException)
    assert [c.embedding for c in a.chunks] == [c.embedding for c in b.chunks]


async def test_a_mixed_batch_is_interactive_and_a_shared_model_takes_turns() -> None:
    model = GateModel()
    batcher = BatchEmbedder(model, cache=None)
    out = await batcher.embed_events([_event("x", BULK), _event("y")])
    assert all(not isinstance(r, BaseException) for r in out)
    # without a twin both lanes share one semaphore: one call at a time on one model
    assert batcher._sems[BULK] is batcher._sems[INTERACTIVE]


def test_a_bulk_twin_of_another_model_is_refused() -> None:
    class Other(GateModel):
        revision = "r2"

    with pytest.raises(ValueError, match="same model"):
        BatchEmbedder(GateModel(), cache=None, bulk_embedder=Other())
