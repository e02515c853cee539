"""The embedder stage: doc.enriched in, doc.embedded out, micro-batched across messages.

The runtime hands it up to ``batch.max_records`` events at once (or what arrived within
``linger_ms``); ``handle_batch`` embeds all their children together. The model loads in
``start`` in a worker thread; the Postgres pool is only for the embedding cache.

Huge documents in slices: one message computes at most about ``slice_texts`` texts
(``batcher.slice_plan``). A document left unfinished is published again, unchanged, to
its own input topic in the bulk lane (as the chunker sends a heavy document on), after
its finished slice is committed to the embedding cache; the message is then committed
and the consumer polls again. The next pass finds the finished slices in the cache and
embeds the next one; the pass that completes it emits the one ``doc.embedded`` of the
whole document, which the indexer writes in one transaction: a query sees all of its
chunks or none. A SIGKILL mid-slice redelivers the message; only the unfinished slice is
computed again (a continuation already published runs too: the same vectors from the
cache, the same ``doc.embedded`` event id, which the indexer's ledger applies once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import ClassVar

from psycopg_pool import AsyncConnectionPool

from ragline.config import Settings
from ragline.embedding.adaptive import batch_sizer, model_batch_size
from ragline.embedding.batcher import BatchEmbedder, Unfinished
from ragline.embedding.cache import PgVectorCache
from ragline.embedding.metrics import BACKEND_INFO, POLL_PHASE_SECONDS, SLICES_HANDED_ON
from ragline.embedding.model import Embedder, backend_of, load_embedder
from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.space_feed import SpaceFeeder
from ragline.errors import NotBuiltError
from ragline.events import BULK, DocEmbedded, DocEnriched, Topics
from ragline.runtime.lanes import LaneSettings, with_lane
from ragline.runtime.priority import lane_context
from ragline.runtime.stage import BatchConfig, Output, Results, Stage, StageContext
from ragline.store.pool import open_pool

__all__ = ["EmbedderStage"]

_log = logging.getLogger(__name__)


class EmbedderStage(Stage[DocEnriched, DocEmbedded | DocEnriched]):
    name: ClassVar[str] = "embedder"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_ENRICHED.value,)
    # up to 64 documents per poll, or what arrived within 50 ms: fills model batches
    # across documents while bounding memory (64 documents in flight per replica)
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=64, linger_ms=50)

    def __init__(
        self,
        settings: Settings,
        config: EmbedderSettings,
        *,
        embedder: Embedder | None = None,
        lanes: LaneSettings | None = None,
    ) -> None:
        super().__init__(settings)
        self.config = config
        self._embedder = embedder
        self._bulk_embedder: Embedder | None = None
        # bulk model calls run at a lower CPU priority (runtime/priority.py): with ONNX
        # Runtime the bulk lane gets its own session, built in a bulk thread
        self.bulk_twin = lanes is not None and lanes.bulk_nice > 0
        self._pool: AsyncConnectionPool | None = None
        self._batcher: BatchEmbedder | None = None
        self.feeder: SpaceFeeder | None = None  # shadow spaces of another recipe (ADR 0013)

    async def open(self) -> None:
        cfg = self.config
        if self._embedder is None:
            self._embedder = await asyncio.to_thread(
                load_embedder,
                cfg,
                threads=cfg.threads,
                batch_size=model_batch_size(cfg),
                parallel=cfg.texts_at_once(),
            )
            if self.bulk_twin and backend_of(self._embedder) != "torch":
                # a twin ONNX Runtime session built in a bulk thread: its worker threads
                # inherit the bulk priority (torch's pool is process-wide: no twin)
                with lane_context(BULK):
                    self._bulk_embedder = await asyncio.to_thread(
                        load_embedder,
                        cfg,
                        threads=cfg.threads,
                        batch_size=model_batch_size(cfg),
                        parallel=cfg.texts_at_once(),
                    )
        BACKEND_INFO.info({"backend": backend_of(self._embedder)})
        cache = None
        if self.config.cache:
            self._pool = await open_pool(
                self.settings.admin_dsn(), name="embedder", max_size=self.config.pool_max
            )
            cache = PgVectorCache(
                self._pool, model=self._embedder.name, revision=self._embedder.revision
            )
            self.feeder = SpaceFeeder(self._pool, self._embedder, batch_size=self.config.batch_size)
        self._batcher = BatchEmbedder(
            self._embedder,
            cache=cache,
            batch_size=self.config.batch_size,
            max_in_flight=self.config.max_in_flight_batches,
            sizer=batch_sizer(self.config),
            bulk_sizer=batch_sizer(self.config),
            bulk_embedder=self._bulk_embedder,
            background_put=self.config.background_cache_put,
        )

    async def close(self) -> None:
        if self._batcher is not None:
            await self._batcher.flush()  # the last poll's cache write
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @property
    def batcher(self) -> BatchEmbedder:
        if self._batcher is None:
            raise NotBuiltError("embedder stage used before start()")
        return self._batcher

    async def process_batch(
        self, events: Sequence[DocEnriched], ctx: StageContext
    ) -> Results[DocEmbedded | DocEnriched]:
        t0 = time.perf_counter()
        results = await self.batcher.embed_events(events, slice_texts=self.config.slice_texts)
        t1 = time.perf_counter()
        took = round(t1 - t0, 3)  # the poll's embedding, for the slice logs
        if self.feeder is not None:  # before doc.embedded is out: the indexer reads it
            await self.feeder.feed(
                [e for e, r in zip(events, results, strict=True) if isinstance(r, DocEmbedded)]
            )
            POLL_PHASE_SECONDS.labels("spaces").inc(time.perf_counter() - t1)
        out: list[list[Output[DocEmbedded | DocEnriched]] | BaseException] = []
        for ev, r in zip(events, results, strict=True):
            if isinstance(r, Unfinished):
                SLICES_HANDED_ON.inc()
                _log.info(
                    "document handed on after a slice",
                    extra={
                        "fields": {
                            "document_id": ev.document_id,
                            "done": r.done,
                            "of": r.total,
                            "poll_seconds": took,
                        }
                    },
                )
                again = with_lane(ev, BULK)  # the rest of a huge document is bulk work
                out.append([Output(topic=Topics.DOC_ENRICHED.value, event=again)])
            elif isinstance(r, BaseException):
                out.append(r)
            else:
                if 0 < self.config.slice_texts < len(r.chunks):
                    _log.info(
                        "large document embedded",
                        extra={
                            "fields": {
                                "document_id": ev.document_id,
                                "chunks": len(r.chunks),
                                "poll_seconds": took,
                            }
                        },
                    )
                out.append([Output(topic=Topics.DOC_EMBEDDED.value, event=r)])
        return out
