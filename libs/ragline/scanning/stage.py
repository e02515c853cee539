"""The scanner Stage: ``doc.parsed`` in, ``doc.scanned`` out (or a quarantine).

Every route reaches the chunker through here: content, metadata-only and resync events
are all ``doc.parsed`` and all are scanned in full. Detection runs off the event loop
(a thread, or worker processes with ``RAGLINE_SCANNER_WORKERS``); a micro-batch of
documents is scanned concurrently so a worker pool stays busy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from ragline.events import DocParsed, Topics
from ragline.runtime.settings import Settings
from ragline.runtime.stage import BatchConfig, Output, Stage, StageContext
from ragline.scanning.factory import build_scanner
from ragline.scanning.scanner import Scanner
from ragline.scanning.settings import ScannerSettings

__all__ = ["ScannerStage"]


class ScannerStage(Stage):
    name: ClassVar[str] = "scanner"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_PARSED.value,)
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=16, linger_ms=20)

    def __init__(self, settings: Settings, scanner_settings: ScannerSettings | None = None) -> None:
        super().__init__(settings)
        self._scanner_settings = scanner_settings
        self._scanner: Scanner | None = None

    @property
    def scanner(self) -> Scanner:
        if self._scanner is None:
            raise RuntimeError("ScannerStage.start() was not called")
        return self._scanner

    async def start(self) -> None:
        self._scanner = build_scanner(self._scanner_settings or ScannerSettings())
        await self._scanner.start()

    async def stop(self) -> None:
        if self._scanner is not None:
            await self._scanner.stop()
            self._scanner = None

    async def handle(self, event: Any, ctx: StageContext) -> Sequence[Output]:
        if not isinstance(event, DocParsed):
            from ragline.errors import ContractError

            raise ContractError(f"scanner expects doc.parsed, got {type(event).__name__}")
        scanned = await self.scanner.scan(event)
        return [Output(topic=Topics.DOC_SCANNED.value, event=scanned)]

    async def handle_batch(
        self, events: Sequence[Any], ctx: StageContext
    ) -> Sequence[Sequence[Output] | BaseException]:
        results = await asyncio.gather(
            *(self.handle(ev, ctx) for ev in events), return_exceptions=True
        )
        return list(results)
