"""Parser service: ``doc.fetched`` -> ``doc.parsed`` (wiring only; logic in ragline.parsing)."""

from __future__ import annotations

from collections.abc import Sequence

from ragline.config import Settings
from ragline.events import DocFetched, DocParsed, Topics
from ragline.parsing import ParseExecutor, ParserSettings, decode_payload
from ragline.runtime.stage import Output, Stage, StageContext

__all__ = ["ParserStage", "build"]

# output event ids derive from the input's, so a replayed input yields the same event


class ParserStage(Stage):
    name = "parser"
    input_topics = (Topics.DOC_FETCHED.value,)

    def __init__(self, settings: Settings, parser: ParserSettings | None = None) -> None:
        super().__init__(settings)
        self.parser_settings = parser or ParserSettings()
        self._executor = ParseExecutor(self.parser_settings)

    async def start(self) -> None:
        await self._executor.start()

    async def stop(self) -> None:
        await self._executor.stop()

    async def handle(self, event: DocFetched, ctx: StageContext) -> Sequence[Output]:
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


def build(settings: Settings) -> Stage:
    return ParserStage(settings)
