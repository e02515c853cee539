"""The cache write of a poll runs while the next poll computes (``background_put``):
the model never waits for it, its vectors are found again while it is in flight, a
failed write never fails a later poll, one write at a time, and a poll that hands on a
sliced document still commits every vector before it returns."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import numpy as np

from ragline.embedding.batcher import BatchEmbedder, Unfinished
from ragline.embedding.cache import MemoryVectorCache
from ragline.errors import BackendUnavailable
from ragline.events import DocEmbedded
from ragline.indexing.samples import PseudoEmbedder, enriched_event


class CountingModel(PseudoEmbedder):
    """Pseudo vectors, remembering every text it was asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().encode(texts)


class GatedCache(MemoryVectorCache):
    """A cache whose writes wait for ``release`` (a slow Postgres), counting them."""

    def __init__(self, *, fail: bool = False) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.fail = fail
        self.writing = 0
        self.most_at_once = 0

    async def put(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.writing += 1
        self.most_at_once = max(self.most_at_once, self.writing)
        try:
            await self.release.wait()
            if self.fail:
                raise BackendUnavailable("postgres down")
            await super().put(vectors)
        finally:
            self.writing -= 1


def _doc(name: str, n: int):  # type: ignore[no-untyped-def]
    return enriched_event(
        tenant_id="acme",
        document_id=f"wiki:{name}",
        source_seq=1,
        texts=[f"{name} paragraph {j}" for j in range(n)],
    )


async def test_a_poll_returns_before_its_cache_write_and_the_write_lands_after() -> None:
    cache, model = GatedCache(), CountingModel()
    batcher = BatchEmbedder(model, cache=cache, background_put=True)
    (out,) = await asyncio.wait_for(batcher.embed_events([_doc("a", 3)]), timeout=5)
    assert isinstance(out, DocEmbedded)
    assert cache.data == {} and cache.writing == 1  # still in flight
    cache.release.set()
    assert await batcher.flush() is True
    assert len(cache.data) == 3


async def test_vectors_of_the_write_in_flight_are_not_computed_again() -> None:
    cache, model = GatedCache(), CountingModel()
    batcher = BatchEmbedder(model, cache=cache, background_put=True)
    await batcher.embed_events([_doc("a", 3)])
    computed = len(model.texts)
    # the write has not landed yet: found in it (a recomputation would wait for it here)
    (again,) = await asyncio.wait_for(batcher.embed_events([_doc("a", 3)]), timeout=5)
    assert isinstance(again, DocEmbedded)
    assert len(model.texts) == computed  # found in the write in flight, not recomputed
    # and the vectors are the same ones
    first = {c.chunk_id: c.embedding for c in again.chunks}
    assert all(v is None or len(v) == model.dim for v in first.values())
    cache.release.set()
    await batcher.flush()


async def test_one_write_at_a_time() -> None:
    cache, model = GatedCache(), CountingModel()
    batcher = BatchEmbedder(model, cache=cache, background_put=True)
    await batcher.embed_events([_doc("a", 2)])
    second = asyncio.create_task(batcher.embed_events([_doc("b", 2)]))
    await asyncio.sleep(0.05)
    assert not second.done()  # waits for the first write before starting its own
    assert cache.most_at_once == 1
    cache.release.set()
    (out,) = await asyncio.wait_for(second, timeout=5)
    assert isinstance(out, DocEmbedded)
    await batcher.flush()
    assert len(cache.data) == 4 and cache.most_at_once == 1


async def test_a_failed_background_write_never_fails_a_later_poll() -> None:
    cache, model = GatedCache(fail=True), CountingModel()
    cache.release.set()
    batcher = BatchEmbedder(model, cache=cache, background_put=True)
    await batcher.embed_events([_doc("a", 2)])
    (out,) = await batcher.embed_events([_doc("b", 2)])  # awaits the failed write first
    assert isinstance(out, DocEmbedded)
    assert await batcher.flush() is False  # the second write failed too: reported, not raised


async def test_a_sliced_document_commits_its_vectors_before_it_is_handed_on() -> None:
    cache, model = GatedCache(), CountingModel()
    cache.release.set()
    batcher = BatchEmbedder(model, cache=cache, background_put=True)
    await batcher.embed_events([_doc("small", 2)])  # a background write in flight
    (res,) = await batcher.embed_events([_doc("huge", 20)], slice_texts=8)
    assert isinstance(res, Unfinished)
    # nothing left in flight: the small document's and the slice's vectors are stored
    assert batcher._put_task is None
    assert len(cache.data) == 2 + res.done


async def test_without_background_put_the_write_is_done_when_the_poll_returns() -> None:
    cache, model = GatedCache(), CountingModel()
    batcher = BatchEmbedder(model, cache=cache)
    task = asyncio.create_task(batcher.embed_events([_doc("a", 2)]))
    await asyncio.sleep(0.05)
    assert not task.done()  # waits for its write
    cache.release.set()
    await asyncio.wait_for(task, timeout=5)
    assert len(cache.data) == 2


async def test_both_lanes_share_one_write_in_flight() -> None:
    # the interactive and the bulk consumer call one batcher at the same time
    cache, model = GatedCache(), CountingModel()
    batcher = BatchEmbedder(model, cache=cache, background_put=True)
    await batcher.embed_events([_doc("first", 2)])  # its write waits for the gate
    polls = [asyncio.create_task(batcher.embed_events([_doc(f"lane{i}", 2)])) for i in range(2)]
    await asyncio.sleep(0.05)
    assert cache.most_at_once == 1
    cache.release.set()
    for poll in polls:
        (out,) = await asyncio.wait_for(poll, timeout=5)
        assert isinstance(out, DocEmbedded)
    assert await batcher.flush() is True
    assert cache.most_at_once == 1  # never two writes at once, across lanes
    assert batcher._put_task is None
    assert len(cache.data) == 6  # and none of them lost
