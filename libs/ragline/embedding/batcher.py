"""Micro-batching across documents: every child chunk of every event in a batch is
embedded in model batches of ``batch_size``, each distinct text once, cached ones never.

Per input event the result is its ``doc.embedded``, the exception that failed it (one bad
document never fails its batch neighbours) or, with ``slice_texts``, ``Unfinished``: a
document too large for one call got a slice of its children embedded (their vectors are in
the cache, committed) and is handed on again (``stage.py``), so the time one Kafka message
holds the consumer is bounded by the slice, not by the document (``slice_plan``).

Model compute runs in a worker thread behind a semaphore: bounded in-flight work. A bulk
batch's calls are marked bulk (``runtime/priority.py``: the service's executor runs them
at a lower CPU priority); with a ``bulk_embedder`` (a second instance of the same model)
each lane also has its own semaphore, so an interactive call never waits behind a bulk
call. With one shared model the lanes take turns call by call: a bulk batch takes the
semaphore for each of its calls (sized to ``batch_target_s`` by the adaptive sizer), never
for the whole batch, and the semaphore is first come first served, so an interactive
text waits for at most the one bulk call running, never behind the rest of its batch
(``tests/unit/embedding/test_lane_batching.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from ragline.embedding.adaptive import AdaptiveBatchSizer, estimate_tokens
from ragline.embedding.cache import VectorCache
from ragline.embedding.metrics import (
    CACHE_ERRORS,
    CHUNKS_EMBEDDED,
    MODEL_BATCH_SIZE,
    MODEL_SECONDS,
    POLL_PHASE_SECONDS,
)
from ragline.embedding.model import Embedder
from ragline.embedding.texts import embed_text, text_key
from ragline.errors import ContractError, RaglineError, TransientError
from ragline.events import BULK, INTERACTIVE, ChunkLevel, DocEmbedded, DocEnriched, Lane
from ragline.runtime.priority import lane_context

__all__ = ["BatchEmbedder", "EmbedStats", "Unfinished", "round_vector", "slice_plan"]

_log = logging.getLogger(__name__)


@dataclass
class EmbedStats:
    """Counters since start (the cache test reads them; metrics carry the same)."""

    computed: int = 0
    cached: int = 0
    deduplicated: int = 0
    model_calls: int = 0


@dataclass(frozen=True)
class Unfinished:
    """A document with children still to embed after this call: ``done`` of its ``total``
    distinct child texts have a vector in the cache (a finished slice is never redone)."""

    done: int
    total: int


def slice_plan(need: Sequence[Sequence[str]], budget: int) -> tuple[set[str], set[int]]:
    """The texts to compute in this call, and the documents left unfinished.

    ``need[i]``: the keys document ``i`` still lacks a vector for. Documents go smallest
    first, each whole while the budget lasts; the first that does not fit gets a slice
    (what is left of the budget, at least a quarter of it: a large document always
    advances, even behind many small ones), every later one that does not fit waits
    (computed: nothing). So one call computes at most 1.25 x ``budget`` texts."""
    if budget < 1:
        raise ValueError("budget must be >= 1")
    chosen: set[str] = set()
    unfinished: set[int] = set()
    left = budget
    sliced = False
    for i in sorted(range(len(need)), key=lambda i: (len(need[i]), i)):
        todo = [k for k in dict.fromkeys(need[i]) if k not in chosen]
        if len(todo) <= left:
            chosen.update(todo)
            left -= len(todo)
            continue
        take = 0 if sliced else max(left, budget // 4, 1)
        sliced, left = True, 0
        chosen.update(todo[:take])
        if take < len(todo):
            unfinished.add(i)
    return chosen, unfinished


def round_vector(vec: NDArray[np.float32]) -> tuple[float, ...]:
    """7 decimals: float32 precision for unit vectors, half the JSON of a full repr."""
    return tuple(round(float(x), 7) for x in vec)


class BatchEmbedder:
    def __init__(
        self,
        embedder: Embedder,
        *,
        cache: VectorCache | None,
        batch_size: int = 64,
        max_in_flight: int = 1,
        sizer: AdaptiveBatchSizer | None = None,
        bulk_sizer: AdaptiveBatchSizer | None = None,
        bulk_embedder: Embedder | None = None,
        background_put: bool = False,
    ) -> None:
        """``sizer`` None: fixed calls of ``batch_size`` texts; else adaptive calls
        (length-ordered, sized by pending work and measured speed: ``adaptive.py``).

        ``bulk_embedder`` (same model and revision, built in a bulk thread) serves the
        bulk lane's calls, ``bulk_sizer`` measures its own speed; ``max_in_flight`` then
        bounds the calls of each lane.

        ``background_put``: a poll's new vectors go to the cache while the next poll
        computes (one write in flight; its vectors stay readable here until it is done),
        so the model does not wait for the cache's write: its doc.embedded carries the
        vectors anyway, and a write lost to a crash only costs a recomputation. A poll that
        hands on a sliced document still writes before it returns (the next pass must
        find the slice). ``flush`` waits for the write in flight."""
        if bulk_embedder is not None and (
            bulk_embedder.name,
            bulk_embedder.revision,
            bulk_embedder.dim,
        ) != (embedder.name, embedder.revision, embedder.dim):
            raise ValueError("the bulk lane's embedder must be the same model and revision")
        self.embedder = embedder
        self.cache = cache
        self.batch_size = batch_size
        self.sizer = sizer
        self._models: dict[Lane, Embedder] = {
            INTERACTIVE: embedder,
            BULK: bulk_embedder or embedder,
        }
        self._sizers: dict[Lane, AdaptiveBatchSizer | None] = {
            INTERACTIVE: sizer,
            BULK: bulk_sizer or sizer,
        }
        # one semaphore per lane when each lane has its own model instance (an interactive
        # call never queues behind a bulk call); one shared otherwise: a model instance is
        # called by one thread at a time (a fast tokenizer is not re-entrant)
        shared = asyncio.Semaphore(max_in_flight)
        twin = bulk_embedder is not None and bulk_embedder is not embedder
        self._sems: dict[Lane, asyncio.Semaphore] = {
            INTERACTIVE: shared,
            BULK: asyncio.Semaphore(max_in_flight) if twin else shared,
        }
        self.stats = EmbedStats()
        self.background_put = background_put
        self._put_task: asyncio.Task[bool] | None = None
        self._unsaved: dict[str, NDArray[np.float32]] = {}  # the write in flight's vectors
        # both lanes' consumers share this batcher: one write in flight across them
        self._put_lock = asyncio.Lock()

    async def flush(self) -> bool:
        """Wait for the cache write in flight; False when the cache refused it."""
        async with self._put_lock:
            return await self._flush_locked()

    async def _flush_locked(self) -> bool:
        task, self._put_task = self._put_task, None
        if task is None:
            return True
        try:
            return await task
        except Exception as exc:  # a background write never fails a later poll
            CACHE_ERRORS.labels("put").inc()
            _log.warning(
                "embedding cache write failed", extra={"fields": {"error": type(exc).__name__}}
            )
            return False
        finally:
            self._unsaved = {}

    async def _store_later(self, computed: dict[str, NDArray[np.float32]]) -> None:
        if not computed or self.cache is None:
            return  # nothing to write: the write in flight (if any) goes on alone
        async with self._put_lock:
            await self._flush_locked()  # one write in flight: memory, connections bounded
            self._unsaved = dict(computed)
            self._put_task = asyncio.create_task(self._store(computed))

    async def embed_events(
        self, events: Sequence[DocEnriched], *, slice_texts: int = 0
    ) -> list[DocEmbedded | Unfinished | BaseException]:
        """One lane's batch (a consumer hands over one lane at a time): bulk when every
        event says bulk. ``slice_texts`` > 0 (and a cache): compute at most about that
        many texts now (``slice_plan``); the documents left over are ``Unfinished``."""
        lane: Lane = BULK if events and all(e.priority == BULK for e in events) else INTERACTIVE
        texts: dict[str, str] = {}
        lengths: dict[str, int] = {}  # model tokens, from the chunker's counts (no tokenizing)
        keys_of: list[list[str]] = []
        wanted = 0
        for ev in events:
            mine: list[str] = []
            for c in ev.chunks:
                if c.level is ChunkLevel.CHILD:
                    wanted += 1
                    t = embed_text(c)
                    key = text_key(t)
                    mine.append(key)
                    if key not in texts:
                        texts[key] = t
                        header = c.enrichment.contextual_header.strip() if c.enrichment else ""
                        lengths[key] = estimate_tokens(c.token_count, header)
            keys_of.append(mine)
        t_get = time.perf_counter()
        found, readable = await self._cached(texts)
        t_model = time.perf_counter()
        POLL_PHASE_SECONDS.labels("cache_get").inc(t_model - t_get)
        missing = [k for k in texts if k not in found]
        unfinished: set[int] = set()
        if 0 < slice_texts < len(missing) and self.cache is not None:
            lacking = [[k for k in mine if k not in found] for mine in keys_of]
            chosen, unfinished = slice_plan(lacking, slice_texts)
            missing = [k for k in missing if k in chosen]
        try:
            computed = await self._compute(texts, sorted(missing), lengths, lane)
        except RaglineError as exc:
            return [exc for _ in events]
        t_put = time.perf_counter()
        POLL_PHASE_SECONDS.labels("model").inc(t_put - t_model)
        if self.background_put and not unfinished:
            await self._store_later(computed)
            stored = True
        else:  # a slice handed on: every vector it found or computed must be committed
            stored = await self.flush() and await self._store(computed)
        t_build = time.perf_counter()
        POLL_PHASE_SECONDS.labels("cache_put").inc(t_build - t_put)
        self.stats.deduplicated += wanted - len(texts)
        CHUNKS_EMBEDDED.labels("dedup").inc(wanted - len(texts))
        vectors = {**found, **computed}
        out: list[DocEmbedded | Unfinished | BaseException] = []
        for i, ev in enumerate(events):
            if i not in unfinished:
                out.append(self._embedded(ev, vectors))
            elif not (readable and stored):
                # its finished slices would not be found again: retry, never loop
                out.append(TransientError("embedding cache unavailable: a sliced document"))
            else:
                mine_set = set(keys_of[i])
                done = sum(1 for k in mine_set if k in vectors)
                out.append(Unfinished(done=done, total=len(mine_set)))
        POLL_PHASE_SECONDS.labels("build").inc(time.perf_counter() - t_build)
        return out

    async def _cached(self, texts: dict[str, str]) -> tuple[dict[str, NDArray[np.float32]], bool]:
        """Cached vectors of ``texts`` and whether the cache could be read."""
        found = {k: self._unsaved[k] for k in texts if k in self._unsaved}
        readable = True
        rest = sorted(k for k in texts if k not in found)
        if self.cache is not None and rest:
            try:
                found |= await self.cache.get(rest)
            except RaglineError as exc:
                readable = False
                CACHE_ERRORS.labels("get").inc()
                _log.warning("embedding cache read failed", extra={"fields": {"error": str(exc)}})
        found = {k: v for k, v in found.items() if v.shape == (self.embedder.dim,)}
        self.stats.cached += len(found)
        CHUNKS_EMBEDDED.labels("cache").inc(len(found))
        return found, readable

    async def _compute(
        self, texts: dict[str, str], keys: list[str], lengths: dict[str, int], lane: Lane
    ) -> dict[str, NDArray[np.float32]]:
        computed: dict[str, NDArray[np.float32]] = {}
        for batch in self._plan(keys, lengths, lane):
            vecs = await self._encode(
                [texts[k] for k in batch], [lengths.get(k, 0) for k in batch], lane
            )
            computed.update(zip(batch, vecs, strict=True))
        self.stats.computed += len(computed)
        CHUNKS_EMBEDDED.labels("model").inc(len(computed))
        return computed

    async def _store(self, computed: dict[str, NDArray[np.float32]]) -> bool:
        """Put ``computed`` in the cache; False when the cache refused it."""
        if self.cache is None or not computed:
            return True
        try:
            await self.cache.put(computed)
        except RaglineError as exc:
            CACHE_ERRORS.labels("put").inc()
            _log.warning("embedding cache write failed", extra={"fields": {"error": str(exc)}})
            return False
        return True

    def _plan(
        self, keys: list[str], lengths: dict[str, int], lane: Lane = INTERACTIVE
    ) -> list[list[str]]:
        sizer = self._sizers[lane]
        if sizer is None:
            return [keys[i : i + self.batch_size] for i in range(0, len(keys), self.batch_size)]
        plan = sizer.plan([lengths.get(k, 0) for k in keys])
        return [[keys[i] for i in batch] for batch in plan]

    async def _encode(
        self, batch: list[str], lengths: list[int] | None = None, lane: Lane = INTERACTIVE
    ) -> NDArray[np.float32]:
        model = self._models[lane]
        sizer = self._sizers[lane]
        async with self._sems[lane]:
            t0 = time.perf_counter()
            try:
                with lane_context(lane):  # bulk: the executor's lower-priority threads
                    vecs = await asyncio.to_thread(model.encode, batch)
            except (RuntimeError, MemoryError) as exc:  # torch errors are RuntimeErrors
                raise TransientError(f"embedding model failed: {type(exc).__name__}") from exc
            took = time.perf_counter() - t0
            MODEL_SECONDS.observe(took)
            if sizer is not None and lengths:
                sizer.observe(len(batch) * max(lengths), took)
        MODEL_BATCH_SIZE.observe(len(batch))
        self.stats.model_calls += 1
        if vecs.shape != (len(batch), self.embedder.dim):
            raise TransientError(f"embedding model returned shape {vecs.shape}")
        return vecs

    def _embedded(
        self, ev: DocEnriched, vectors: dict[str, NDArray[np.float32]]
    ) -> DocEmbedded | BaseException:
        try:
            chunks = tuple(
                c.model_copy(update={"embedding": round_vector(vectors[text_key(embed_text(c))])})
                if c.level is ChunkLevel.CHILD
                else c.model_copy(update={"embedding": None})
                for c in ev.chunks
            )
            return DocEmbedded.model_validate(
                {
                    **ev.derived("doc.embedded"),
                    "meta": ev.meta,
                    "findings": ev.findings,
                    "change": ev.change,
                    "chunks": chunks,
                    "embedding_model": self.embedder.name,
                    "embedding_revision": self.embedder.revision,
                    "embedding_dim": self.embedder.dim,
                }
            )
        except (ValidationError, KeyError) as exc:
            return ContractError(f"cannot build doc.embedded: {type(exc).__name__}")
