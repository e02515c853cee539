"""The parser Stage: ``doc.fetched`` in, ``doc.parsed`` out (or a quarantine).

Parsing runs in the ``ParseExecutor`` (a worker thread, or worker processes with a
timeout that kills a stuck parse), so the event loop stays free for heartbeats and
commits. The output event id derives from the input's, so a redelivered message yields
the identical event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from ragline.config import Settings
from ragline.events import DocFetched, DocParsed, Topics
from ragline.parsing.executor import ParseExecutor
from ragline.parsing.limits import decode_payload
from ragline.parsing.settings import ParserSettings
from ragline.runtime.stage import Output, Stage, StageContext

__all__ = ["ParserStage"]


class ParserStage(Stage[DocFetched, DocParsed]):
    name: ClassVar[str] = "parser"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_FETCHED.value,)

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
        ctx.logger.debug(
            "parsed",
            extra={
                "document_id": event.document_id,
                "format": document.format,
                "blocks": len(document.blocks),
            },
        )
        return [Output(topic=Topics.DOC_PARSED.value, event=parsed)]
