"""The enricher Stage: ``doc.chunked`` in, ``doc.enriched`` out (CPU work in a thread)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

from ragline.config import Settings, TokenizerSettings
from ragline.enrichment.enricher import Enricher
from ragline.enrichment.metrics import CHUNKS, ENTITIES
from ragline.enrichment.settings import EnricherSettings
from ragline.events import DocChunked, DocEnriched, Topics
from ragline.runtime.stage import BatchConfig, Output, Results, Stage, StageContext
from ragline.text import load_token_counter

__all__ = ["EnricherStage", "enrich_event"]


def enrich_event(event: DocChunked, enricher: Enricher) -> DocEnriched:
    """Pure: envelope, meta and findings copied through; every chunk enriched."""
    chunks = enricher.enrich(event)
    for c in chunks:
        assert c.enrichment is not None
        CHUNKS.labels(c.enrichment.language, c.enrichment.content_type).inc()
        for kind, values in c.enrichment.entities.items():
            ENTITIES.labels(kind).inc(len(values))
    return DocEnriched(
        **event.derived("enricher"),
        meta=event.meta,
        chunks=tuple(chunks),
        findings=event.findings,
        change=event.change,
    )


class EnricherStage(Stage[DocChunked, DocEnriched]):
    name: ClassVar[str] = "enricher"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_CHUNKED.value,)
    # the records of one poll together (handled one by one): one offset commit per
    # poll and their outputs published concurrently, instead of a commit and a
    # produce round trip per document (issue 35)
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=16, linger_ms=20)

    def __init__(
        self,
        settings: Settings,
        tokenizer: TokenizerSettings,
        enricher_settings: EnricherSettings,
    ) -> None:
        """``tokenizer``: the tokenizer and header budget the chunker sized children with
        (the service passes its ``ChunkerSettings``, which extend them)."""
        super().__init__(settings)
        self._tokenizer = tokenizer
        self._enricher_settings = enricher_settings
        self._enricher: Enricher | None = None

    async def open(self) -> None:
        tok = self._tokenizer
        counter = await asyncio.to_thread(load_token_counter, tok.tokenizer_path)
        self._enricher = Enricher(
            counter, header_budget=tok.header_budget_tokens, settings=self._enricher_settings
        )

    async def process_batch(
        self, events: Sequence[DocChunked], ctx: StageContext
    ) -> Results[DocEnriched]:
        """A poll's events in one worker-thread call (one handoff, not one per event);
        each event's outputs or the exception that failed it, as ``process`` gave."""
        assert self._enricher is not None  # opened: the base refuses before start()
        return await asyncio.to_thread(_enrich_all, events, self._enricher)


def _enrich_all(events: Sequence[DocChunked], enricher: Enricher) -> Results[DocEnriched]:
    results: list[Sequence[Output[DocEnriched]] | BaseException] = []
    for event in events:
        try:
            out = enrich_event(event, enricher)
        except Exception as exc:  # the runtime classifies it
            results.append(exc)
        else:
            results.append([Output(topic=Topics.DOC_ENRICHED.value, event=out)])
    return results
