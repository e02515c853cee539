"""Huge documents in slices (embedding/batcher.py ``slice_plan``, ``Unfinished``): one
call computes a bounded number of texts, a document left unfinished resumes from the
cache without recomputing a finished slice (also in a fresh process after a crash), and
only a complete document becomes a ``doc.embedded``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.embedding.batcher import BatchEmbedder, Unfinished, slice_plan
from ragline.embedding.cache import MemoryVectorCache
from ragline.errors import BackendUnavailable, TransientError
from ragline.events import ChunkLevel, DocEmbedded
from ragline.indexing.samples import enriched_event, pseudo_embedding


class CountingModel:
    name = "count-model"
    revision = "r1"
    dim = 8

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return np.asarray([pseudo_embedding(t, self.dim) for t in texts], dtype=np.float32)


class NoPutCache(MemoryVectorCache):
    async def put(self, vectors: Mapping[str, np.ndarray]) -> None:
        raise BackendUnavailable("postgres down")


def _doc(name: str, n: int):  # type: ignore[no-untyped-def]
    return enriched_event(
        tenant_id="acme",
        document_id=f"wiki:{name}",
        source_seq=1,
        texts=[f"{name} paragraph {j}" for j in range(n)],
    )


@given(
    st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=12),
    st.integers(min_value=1, max_value=40),
)
def test_slice_plan_bounds_a_call_and_always_advances(sizes: list[int], budget: int) -> None:
    need = [[f"{d}:{j}" for j in range(n)] for d, n in enumerate(sizes)]
    chosen, unfinished = slice_plan(need, budget)
    assert len(chosen) <= budget + max(budget // 4, 1)
    for i, keys in enumerate(need):
        if i not in unfinished:
            assert set(keys) <= chosen  # a finished document has every text
        else:
            assert not set(keys) <= chosen
    if unfinished:  # progress: never a call that computes nothing
        assert chosen
    # a document alone (a continuation) always advances by a full slice
    alone, left_over = slice_plan([need[0]], budget)
    assert len(alone) == min(len(need[0]), budget)
    assert left_over == ({0} if len(need[0]) > budget else set())


def test_small_documents_finish_before_a_huge_one_is_sliced() -> None:
    need = [[f"huge:{j}" for j in range(100)], ["a:0", "a:1"], ["b:0"]]
    chosen, unfinished = slice_plan(need, 10)
    assert unfinished == {0}
    assert {"a:0", "a:1", "b:0"} <= chosen and len(chosen) == 10


async def test_a_huge_document_is_embedded_in_slices_each_text_once() -> None:
    model, cache = CountingModel(), MemoryVectorCache()
    doc = _doc("huge", 50)
    passes: list[Unfinished] = []
    final = None
    for _ in range(20):
        (res,) = await BatchEmbedder(model, cache=cache).embed_events([doc], slice_texts=8)
        if isinstance(res, Unfinished):
            passes.append(res)
            continue
        final = res
        break
    assert isinstance(final, DocEmbedded)
    # 50 texts in passes of 8 (the last pass completes the document): no text twice
    assert len(model.texts) == len(set(model.texts)) == 50
    assert [p.done for p in passes] == [8, 16, 24, 32, 40, 48]
    assert all(p.total == 50 for p in passes)
    # the same vectors as one pass without slices
    (whole,) = await BatchEmbedder(CountingModel(), cache=None).embed_events([doc])
    assert isinstance(whole, DocEmbedded)
    assert [c.embedding for c in final.chunks] == [c.embedding for c in whole.chunks]
    assert sum(c.level is ChunkLevel.CHILD for c in final.chunks) == 50


async def test_a_crash_mid_document_recomputes_no_finished_slice() -> None:
    model, cache = CountingModel(), MemoryVectorCache()
    doc = _doc("huge", 30)
    (first,) = await BatchEmbedder(model, cache=cache).embed_events([doc], slice_texts=10)
    assert first == Unfinished(done=10, total=30)
    # the process dies before its continuation is published: the input is redelivered to
    # a fresh process, which finds the first slice in the cache
    (again,) = await BatchEmbedder(model, cache=cache).embed_events([doc], slice_texts=10)
    assert again == Unfinished(done=20, total=30)
    assert len(model.texts) == len(set(model.texts)) == 20


async def test_a_slice_the_cache_did_not_keep_is_retried_not_handed_on() -> None:
    model = CountingModel()
    (res,) = await BatchEmbedder(model, cache=NoPutCache()).embed_events(
        [_doc("huge", 30)], slice_texts=10
    )
    # handed on, it would find nothing of its slice and loop forever: a retriable error
    assert isinstance(res, TransientError)


async def test_without_a_cache_or_slices_a_document_is_embedded_whole() -> None:
    for cache, slice_texts in ((None, 10), (MemoryVectorCache(), 0)):
        model = CountingModel()
        (res,) = await BatchEmbedder(model, cache=cache).embed_events(
            [_doc("huge", 30)], slice_texts=slice_texts
        )
        assert isinstance(res, DocEmbedded) and len(model.texts) == 30


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="budget"):
        slice_plan([["a"]], 0)
