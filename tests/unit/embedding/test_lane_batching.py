"""Lanes over one shared model (embedding/batcher.py): a bulk batch holds the model one
call at a time, so an interactive text waits for at most the bulk call running, never
behind the rest of the bulk batch; and a poll's texts go to the model as full batches
across documents."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np

from ragline.embedding.batcher import BatchEmbedder
from ragline.events import BULK, DocEmbedded
from ragline.indexing.samples import enriched_event, pseudo_embedding
from ragline.runtime.lanes import with_lane


class HeldModel:
    """Records each call's texts; the first call is held until ``release`` is set."""

    name = "held-model"
    revision = "r1"
    dim = 8

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        self.entered.set()
        assert self.release.wait(30), "held call never released"
        return np.asarray([pseudo_embedding(t, self.dim) for t in texts], dtype=np.float32)


def _doc(name: str, n: int, lane: str = "interactive"):  # type: ignore[no-untyped-def]
    ev = enriched_event(
        tenant_id="acme",
        document_id=f"wiki:{name}",
        source_seq=1,
        texts=[f"{name} paragraph {j}" for j in range(n)],
    )
    return with_lane(ev, lane)  # type: ignore[arg-type]


async def test_an_interactive_text_waits_for_one_bulk_call_not_the_bulk_batch() -> None:
    model = HeldModel()
    # one model for both lanes (torch, or bulk_nice 0): calls of 2 texts, so the bulk
    # batch of 3 documents x 2 children is three calls
    batcher = BatchEmbedder(model, cache=None, batch_size=2)
    bulk = asyncio.create_task(batcher.embed_events([_doc(f"bulk{i}", 2, BULK) for i in range(3)]))
    assert await asyncio.to_thread(model.entered.wait, 30)  # bulk call 1 is running
    edit = asyncio.create_task(batcher.embed_events([_doc("edit", 1)]))
    await asyncio.sleep(0.2)  # the edit is now queued for the model
    model.release.set()
    (res,) = await asyncio.wait_for(edit, 30)
    out = await asyncio.wait_for(bulk, 30)
    assert isinstance(res, DocEmbedded)
    assert all(isinstance(r, DocEmbedded) for r in out)
    lanes = ["edit" if any("edit paragraph" in t for t in c) else "bulk" for c in model.calls]
    # the edit went right after the bulk call that was running, before the other two
    assert lanes == ["bulk", "edit", "bulk", "bulk"], model.calls


async def test_a_poll_goes_to_the_model_as_full_batches_across_documents() -> None:
    model = HeldModel()
    model.release.set()
    batcher = BatchEmbedder(model, cache=None, batch_size=8)
    # 12 documents of 2 children: 24 texts, 3 full calls of 8, each mixing documents
    await batcher.embed_events([_doc(f"d{i:02d}", 2, BULK) for i in range(12)])
    assert [len(c) for c in model.calls] == [8, 8, 8]
    assert all(len({t.split()[1] for t in c}) > 1 for c in model.calls)
