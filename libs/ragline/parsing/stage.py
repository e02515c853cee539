"""The parser Stage: ``doc.fetched`` in, ``doc.parsed`` out (or a quarantine).

Parsing runs in the ``ParseExecutor`` (a worker thread, or worker processes with a
timeout that kills a stuck parse), so the event loop stays free for heartbeats and
commits. The output event id derives from the input's, so a redelivered message yields
the identical event.

Once parsed, a document's cost to the stages after it is known: one that came on the
interactive lane and is heavy by ``ragline.text.weight`` (characters, blocks, lines,
table cells, its longest line; the chunker's measure) is sent on in the bulk lane
(``doc.parsed.bulk``), so a small but wide document (a CSV of 20,000 columns is 209 KB,
under the connector's byte threshold) never holds the scanner's interactive lane
(docs/lanes.md). A lane only goes down.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

from ragline.config import Settings
from ragline.events import BULK, INTERACTIVE, DocFetched, DocParsed, Topics
from ragline.parsing.executor import ParseExecutor
from ragline.parsing.limits import decode_payload
from ragline.parsing.metrics import HEAVY_DEMOTED
from ragline.parsing.settings import ParserSettings
from ragline.runtime.lanes import with_lane
from ragline.runtime.stage import BatchConfig, Output, Stage, StageContext
from ragline.text.weight import weigh

__all__ = ["ParserStage"]


class ParserStage(Stage[DocFetched, DocParsed]):
    name: ClassVar[str] = "parser"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_FETCHED.value,)
    # the records of one poll together (handled one by one): one offset commit per
    # poll and their outputs published concurrently, instead of a commit and a
    # produce round trip per document (issue 35)
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=16, linger_ms=20)

    def __init__(self, settings: Settings, parser: ParserSettings) -> None:
        super().__init__(settings)
        self.parser_settings = parser
        self._executor = ParseExecutor(self.parser_settings)

    async def open(self) -> None:
        await self._executor.start()

    async def close(self) -> None:
        await self._executor.stop()

    async def process(self, event: DocFetched, ctx: StageContext) -> Sequence[Output[DocParsed]]:
        data = decode_payload(event.content_b64, self.parser_settings)
        document = await self._executor.parse(data, event.meta)
        parsed = DocParsed(
            **event.derived(self.name),
            meta=event.meta,
            document=document,
            change=event.change,
        )
        if event.priority == INTERACTIVE:
            # off the loop: a 1M-line document's lines are split to find the longest
            over = (await asyncio.to_thread(weigh, document)).over(
                self.parser_settings.heavy_limits
            )
            if over:
                for measure in over:
                    HEAVY_DEMOTED.labels(measure=measure).inc()
                ctx.logger.info(
                    "heavy document: sent on in the bulk lane",
                    extra={"fields": {"document_id": event.document_id, "over": ",".join(over)}},
                )
                parsed = with_lane(parsed, BULK)  # a lane only goes down (docs/lanes.md)
        ctx.logger.debug(
            "parsed",
            extra={
                "document_id": event.document_id,
                "format": document.format,
                "blocks": len(document.blocks),
            },
        )
        return [Output(topic=Topics.DOC_PARSED.value, event=parsed)]
