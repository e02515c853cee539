"""Optional cross-encoder reranking of the fused top candidates.

A ``sentence_transformers.CrossEncoder`` loaded from a configured LOCAL directory (no
package here ships cross-encoder weights, so the service runs without one by default).
Scoring runs in one worker thread with a deadline; on failure or timeout the caller
keeps the fusion order and reports the degradation instead of failing the search.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ragline.errors import ConfigError, RaglineError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

__all__ = ["CrossEncoderReranker", "RerankFailed", "Reranker"]


class RerankFailed(RaglineError):
    """The reranker could not score in time; ``reason`` is a short code for ``degraded``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Reranker(Protocol):
    async def score(self, query: str, texts: list[str], *, timeout_s: float) -> list[float]: ...


class CrossEncoderReranker:
    def __init__(
        self,
        model_path: Path,
        *,
        max_length: int = 512,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        self._path = model_path
        self._threads = threads
        self._max_length = max_length
        self._batch_size = batch_size
        self._model: CrossEncoder | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rerank")

    def load(self) -> None:
        from sentence_transformers import CrossEncoder

        if not self._path.is_dir():
            raise ConfigError(f"rerank model directory not found: {self._path}")
        if self._threads is not None:
            # torch's intra-op threads (process-wide; torch is loaded only for this): a
            # busy 2-core machine made two spinning threads far slower than one
            import torch

            torch.set_num_threads(self._threads)
        self._model = CrossEncoder(str(self._path), device="cpu", max_length=self._max_length)

    async def aload(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._pool, self.load)

    def _predict(self, query: str, texts: list[str]) -> list[float]:
        if self._model is None:
            raise RerankFailed("rerank_unavailable")
        scores = self._model.predict(
            [(query, t) for t in texts], batch_size=self._batch_size, show_progress_bar=False
        )
        return [float(s) for s in scores]

    async def score(self, query: str, texts: list[str], *, timeout_s: float) -> list[float]:
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(self._pool, self._predict, query, texts), timeout_s
            )
        except TimeoutError as exc:
            raise RerankFailed("rerank_timeout") from exc
        except RerankFailed:
            raise
        except Exception as exc:  # model/tokenizer errors: fall back to fusion order
            raise RerankFailed("rerank_failed") from exc

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
