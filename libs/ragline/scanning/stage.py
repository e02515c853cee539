"""The scanner Stage: ``doc.parsed`` in, ``doc.scanned`` out (or a quarantine).

Every route reaches the chunker through here: content, metadata-only and resync events
are all ``doc.parsed`` and all are scanned in full. Detection runs off the event loop
(a thread, or worker processes with ``RAGLINE_SCANNER_WORKERS``); a micro-batch of
documents is scanned concurrently so a worker pool stays busy.

A blocked document leaves no raw copy behind: before the runtime quarantines it, every
claim-checked body of it (``source.changes``, ``doc.fetched``, ``doc.parsed``, earlier
dead letters) is purged, and its dead letter keeps no body (``ScanBlocked.withhold_body``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar

from ragline.config import Settings
from ragline.events import DocParsed, DocScanned, Topics
from ragline.runtime.stage import BatchConfig, Output, Results, Stage, StageContext
from ragline.scanning.factory import build_scanner
from ragline.scanning.scanner import ScanBlocked, Scanner
from ragline.scanning.settings import ScannerSettings
from ragline.store.claimcheck import ClaimCheckStore

__all__ = ["ScannerStage"]


class ScannerStage(Stage[DocParsed, DocScanned]):
    name: ClassVar[str] = "scanner"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_PARSED.value,)
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=16, linger_ms=20)

    def __init__(
        self,
        settings: Settings,
        scanner_settings: ScannerSettings,
        *,
        purge: Callable[[str, str], Awaitable[int]] | None = None,
    ) -> None:
        """``purge(tenant, document)``: removes the document's stored raw bodies (default:
        the claim-check store's ``purge_document``)."""
        super().__init__(settings)
        self._scanner_settings = scanner_settings
        self._scanner: Scanner | None = None
        self._claims: ClaimCheckStore | None = None
        self._purge = purge

    @property
    def scanner(self) -> Scanner:
        if self._scanner is None:
            raise RuntimeError("ScannerStage.start() was not called")
        return self._scanner

    async def open(self) -> None:
        self._scanner = build_scanner(self._scanner_settings)
        await self._scanner.start()

    async def close(self) -> None:
        if self._scanner is not None:
            await self._scanner.stop()
            self._scanner = None
        if self._claims is not None:
            await self._claims.close()
            self._claims = None

    async def process(self, event: DocParsed, ctx: StageContext) -> Sequence[Output[DocScanned]]:
        try:
            scanned = await self.scanner.scan(event)
        except ScanBlocked:
            await self._purge_bodies(event.tenant_id, event.document_id)
            raise
        return [Output(topic=Topics.DOC_SCANNED.value, event=scanned)]

    async def _purge_bodies(self, tenant_id: str, document_id: str) -> None:
        if self._purge is not None:
            await self._purge(tenant_id, document_id)
            return
        if self._claims is None:
            self._claims = ClaimCheckStore(self.settings.admin_dsn(), name="scanner-purge")
        await self._claims.purge_document(tenant_id, document_id)

    async def process_batch(
        self, events: Sequence[DocParsed], ctx: StageContext
    ) -> Results[DocScanned]:
        """The batch's documents scanned concurrently (a worker pool stays busy)."""
        results = await asyncio.gather(
            *(self.process(ev, ctx) for ev in events), return_exceptions=True
        )
        return list(results)
