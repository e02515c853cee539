"""The chunker Stage: ``doc.scanned`` in, ``doc.chunked`` out.

Chunking is CPU-bound, so it runs in a worker thread (``asyncio.to_thread``) and the
event loop stays free for heartbeats and commits. The output event id is derived from
the input event id, so a redelivered message yields the identical event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import ClassVar

from ragline.chunking.chunker import Chunker
from ragline.chunking.config import ChunkerSettings
from ragline.chunking.metrics import CHILD_TOKENS, CHUNK_SECONDS, CHUNKS
from ragline.config import Settings
from ragline.events import Chunk, ChunkLevel, DocChunked, DocScanned, Topics
from ragline.runtime.stage import Output, Stage, StageContext
from ragline.text.tokenizer import load_token_counter

__all__ = ["ChunkerStage", "chunk_event"]


def chunk_event(event: DocScanned, chunker: Chunker) -> DocChunked:
    """Pure: the same event under the same settings gives the same chunks and ids."""
    started = time.perf_counter()
    chunks = chunker.chunk(
        event.document,
        document_id=event.document_id,
        content_hash=event.content_hash,
        file_path=event.meta.uri,
    )
    CHUNK_SECONDS.observe(time.perf_counter() - started)
    _observe(chunks)
    return DocChunked(
        **event.derived("chunker"),
        meta=event.meta,
        chunks=tuple(chunks),
        findings=event.findings,
        change=event.change,
    )


def _observe(chunks: Sequence[Chunk]) -> None:
    for c in chunks:
        CHUNKS.labels(c.level.value, c.content_type).inc()
        if c.level is ChunkLevel.CHILD:
            CHILD_TOKENS.observe(c.token_count)


class ChunkerStage(Stage[DocScanned, DocChunked]):
    name: ClassVar[str] = "chunker"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_SCANNED.value,)

    def __init__(self, settings: Settings, chunker_settings: ChunkerSettings) -> None:
        super().__init__(settings)
        self._chunker_settings = chunker_settings
        self._chunker: Chunker | None = None

    async def open(self) -> None:
        conf = self._chunker_settings
        counter = await asyncio.to_thread(load_token_counter, conf.tokenizer_path)
        self._chunker = Chunker(conf, counter)

    async def process(self, event: DocScanned, ctx: StageContext) -> Sequence[Output[DocChunked]]:
        assert self._chunker is not None  # opened: the base refuses before start()
        out = await asyncio.to_thread(chunk_event, event, self._chunker)
        return [Output(topic=Topics.DOC_CHUNKED.value, event=out)]
