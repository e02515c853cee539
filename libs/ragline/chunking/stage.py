"""The chunker Stage: ``doc.scanned`` in, ``doc.chunked`` out.

Chunking is CPU-bound, so it runs off the event loop and the loop stays free for
heartbeats and commits: in a worker thread, or, for a heavy document
(``ragline.text.weight``), in a process of its own that exits afterwards
(``runtime.oneshot.run_once``): its CPU work never slows the interactive work of this
process, its memory is given back with the process, and it takes at most
``heavy_timeout_s`` (then it is quarantined: ``chunk_timeout``). A heavy document that
arrives on the interactive lane is first sent on to this stage's bulk lane
(``doc.scanned.bulk``) unchanged, so it never holds the interactive lane; the output of
one with more than ``heavy_children`` children goes to the bulk lane too
(docs/lanes.md). The output event id is derived from the input event id, so a
redelivered message yields the identical event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import ClassVar

from ragline.chunking.chunker import Chunker
from ragline.chunking.config import ChunkerSettings
from ragline.chunking.metrics import (
    CHILD_TOKENS,
    CHUNK_SECONDS,
    CHUNKS,
    HEAVY_DOCUMENTS,
    QUARANTINED,
    REROUTED,
)
from ragline.config import Settings
from ragline.errors import QuarantineError
from ragline.events import BULK, INTERACTIVE, Chunk, ChunkLevel, DocChunked, DocScanned, Topics
from ragline.runtime.lanes import with_lane
from ragline.runtime.oneshot import WorkLimit, run_once
from ragline.runtime.stage import BatchConfig, Output, Results, Stage, StageContext
from ragline.text.tokenizer import load_token_counter
from ragline.text.weight import weigh

__all__ = ["ChunkerStage", "chunk_event"]


def _chunked(event: DocScanned, chunker: Chunker) -> DocChunked:
    chunks = chunker.chunk(
        event.document,
        document_id=event.document_id,
        content_hash=event.content_hash,
        file_path=event.meta.uri,
    )
    return DocChunked(
        **event.derived("chunker"),
        meta=event.meta,
        chunks=tuple(chunks),
        findings=event.findings,
        change=event.change,
    )


def chunk_event(event: DocScanned, chunker: Chunker) -> DocChunked:
    """Pure: the same event under the same settings gives the same chunks and ids."""
    started = time.perf_counter()
    out = _chunked(event, chunker)
    CHUNK_SECONDS.observe(time.perf_counter() - started)
    _observe(out.chunks)
    return out


@cache
def _process_chunker(settings: ChunkerSettings, tokenizer: Path | None) -> Chunker:
    return Chunker(settings, load_token_counter(tokenizer))


def chunk_heavy(event: DocScanned, settings: ChunkerSettings) -> DocChunked:
    """The job of a heavy document's own process (module level: pickled by name)."""
    return _chunked(event, _process_chunker(settings, settings.tokenizer_path))


def _observe(chunks: Sequence[Chunk]) -> None:
    for c in chunks:
        CHUNKS.labels(c.level.value, c.content_type).inc()
        if c.level is ChunkLevel.CHILD:
            CHILD_TOKENS.observe(c.token_count)


def _chunk_all(events: Sequence[DocScanned], chunker: Chunker) -> list[DocChunked | BaseException]:
    """``chunk_event`` of each, or the exception that failed it (one thread call)."""
    out: list[DocChunked | BaseException] = []
    for event in events:
        try:
            out.append(chunk_event(event, chunker))
        except Exception as exc:  # that event's own failure
            out.append(exc)
    return out


def _children(chunks: Sequence[Chunk]) -> int:
    return sum(1 for c in chunks if c.level is ChunkLevel.CHILD)


class ChunkerStage(Stage[DocScanned, DocChunked | DocScanned]):
    name: ClassVar[str] = "chunker"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_SCANNED.value,)
    # the records of one poll together (handled one by one): one offset commit per
    # poll and their outputs published concurrently, instead of a commit and a
    # produce round trip per document (issue 35)
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=16, linger_ms=20)

    def __init__(self, settings: Settings, chunker_settings: ChunkerSettings) -> None:
        super().__init__(settings)
        self._chunker_settings = chunker_settings
        self._chunker: Chunker | None = None

    async def open(self) -> None:
        conf = self._chunker_settings
        counter = await asyncio.to_thread(load_token_counter, conf.tokenizer_path)
        self._chunker = Chunker(conf, counter)

    async def process_batch(
        self, events: Sequence[DocScanned], ctx: StageContext
    ) -> Results[DocChunked | DocScanned]:
        """A poll's light documents are chunked in one worker-thread call (one handoff,
        not one per document); heavy ones as before, each in its own process or sent to
        the bulk lane. Per event its outputs or the exception that failed it."""
        assert self._chunker is not None  # opened: the base refuses before start()
        limits = self._chunker_settings.heavy_limits
        overs = [weigh(e.document).over(limits) for e in events]
        light = [i for i, over in enumerate(overs) if not over]
        done = await asyncio.to_thread(_chunk_all, [events[i] for i in light], self._chunker)
        chunked = dict(zip(light, done, strict=True))
        results: list[Sequence[Output[DocChunked | DocScanned]] | BaseException] = []
        for i, (event, over) in enumerate(zip(events, overs, strict=True)):
            try:
                results.append(await self._finish(event, over, chunked.get(i), ctx))
            except Exception as exc:  # the runtime classifies it
                results.append(exc)
        return results

    async def _finish(
        self,
        event: DocScanned,
        over: tuple[str, ...],
        chunked: DocChunked | BaseException | None,
        ctx: StageContext,
    ) -> Sequence[Output[DocChunked | DocScanned]]:
        """One event's outputs; ``chunked``: its light chunking, done already."""
        assert self._chunker is not None
        conf = self._chunker_settings
        if over and event.priority == INTERACTIVE:
            # the interactive lane is never held by a heavy document: it goes back to
            # this stage's bulk lane, where it is chunked (a lane only goes down)
            REROUTED.inc()
            return [Output(topic=Topics.DOC_SCANNED.value, event=with_lane(event, BULK))]
        if isinstance(chunked, BaseException):
            raise chunked
        if chunked is not None:
            out = chunked
        elif over and conf.heavy_process:
            out = await self._heavy(event, over, ctx)
        else:
            out = await asyncio.to_thread(chunk_event, event, self._chunker)
        children = _children(out.chunks)
        if 0 < conf.max_children < children:
            QUARANTINED.labels(reason_code="too_heavy").inc()
            raise QuarantineError(
                "too_heavy", f"{children} child chunks, more than {conf.max_children}"
            )
        if over or 0 < conf.heavy_children < children:
            out = with_lane(out, BULK)  # a lane only goes down (docs/lanes.md)
        return [Output(topic=Topics.DOC_CHUNKED.value, event=out)]

    async def _heavy(
        self, event: DocScanned, over: tuple[str, ...], ctx: StageContext
    ) -> DocChunked:
        conf = self._chunker_settings
        HEAVY_DOCUMENTS.inc()
        ctx.logger.info(
            "heavy document: chunked in a process of its own",
            extra={"fields": {"document_id": event.document_id, "over": ",".join(over)}},
        )
        started = time.perf_counter()
        try:
            out = await run_once(
                chunk_heavy,
                event,
                conf,
                timeout_s=conf.heavy_timeout_s,
                memory_mb=conf.heavy_memory_mb,
            )
        except WorkLimit as exc:
            code = "chunk_timeout" if exc.limit == "timeout" else "resource_limit"
            QUARANTINED.labels(reason_code=code).inc()
            raise QuarantineError(code, f"heavy document ({', '.join(over)}): {exc}") from None
        CHUNK_SECONDS.observe(time.perf_counter() - started)
        _observe(out.chunks)
        return out
