"""The connector Stage: ``source.changes`` in, ``doc.fetched`` / ``doc.control`` out.

Upserts are fetched, hashed and compared with what Postgres holds (``intake``);
deletes and ACL changes take the fast path to the indexer. The webhook is served by the
same process through the runtime's optional ``http_app()`` hook.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from ragline.connector.fetch import ContentFetcher
from ragline.connector.intake import (
    Decision,
    control_event,
    decide_before_fetch,
    decide_control,
    decide_upsert,
    fetched_event,
)
from ragline.connector.metrics import DECISIONS
from ragline.connector.settings import ConnectorSettings
from ragline.connector.state import StateStore
from ragline.errors import ContractError
from ragline.events import (
    DocumentMeta,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
    Topics,
)
from ragline.hashing import content_hash, meta_hash
from ragline.runtime.settings import Settings
from ragline.runtime.stage import Output, Stage, StageContext

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["ConnectorStage", "effective_meta"]


def effective_meta(event: SourceUpsert) -> DocumentMeta:
    """The metadata the connector emits and hashes.

    Only deterministic additions (a MIME type guessed from the reference's file name),
    never anything from the fetch itself, so the same event always hashes the same.
    """
    meta = event.meta
    if meta.mime_type is None and event.content_ref is not None:
        loc = event.content_ref.location
        path = urlsplit(loc).path if event.content_ref.kind == "http" else loc
        guessed, _ = mimetypes.guess_type(path)
        if guessed:
            meta = meta.model_copy(update={"mime_type": guessed})
    return meta


class ConnectorStage(Stage):
    name: ClassVar[str] = "connector"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.SOURCE_CHANGES.value,)

    def __init__(
        self,
        settings: Settings,
        cfg: ConnectorSettings | None = None,
        *,
        state: StateStore | None = None,
        fetcher: ContentFetcher | None = None,
    ) -> None:
        super().__init__(settings)
        self.cfg = cfg or ConnectorSettings()
        self.state = state or StateStore(settings.admin_dsn())
        self.fetcher = fetcher or ContentFetcher(self.cfg)

    async def start(self) -> None:
        await self.state.open()
        await self.fetcher.open()

    async def stop(self) -> None:
        await self.fetcher.close()
        await self.state.close()

    def http_app(self) -> FastAPI | None:
        """The webhook, served by the runtime next to the consumer (None if not configured)."""
        if not self.cfg.webhook_enabled or self.cfg.webhook_secret is None:
            return None
        from ragline.connector.webhook import create_app
        from ragline.runtime.publisher import EventPublisher

        settings = self.settings
        return create_app(self.cfg, lambda: EventPublisher(settings, service="connector-webhook"))

    async def handle(self, event: Any, ctx: StageContext) -> Sequence[Output]:
        if isinstance(event, SourceUpsert):
            outputs = await self._upsert(event, ctx)
        elif isinstance(event, SourceDelete | SourceAclChange):
            outputs = await self._control(event, ctx)
        else:
            raise ContractError(f"connector cannot handle {type(event).__name__}")
        return outputs

    async def _upsert(self, event: SourceUpsert, ctx: StageContext) -> list[Output]:
        meta = effective_meta(event)
        mhash = meta_hash(meta)
        stored = await self.state.get(event.tenant_id, event.document_id)
        early = decide_before_fetch(stored, event, mhash)
        if early is not None:
            return self._nothing(event, early, ctx)
        got = await self.fetcher.obtain(event)
        chash = content_hash(got.data)
        if event.content_hash is not None and event.content_hash != chash:
            ctx.logger.warning(
                "source content_hash differs from the fetched bytes; using the computed one",
                extra={"fields": {"document_id": event.document_id}},
            )
        decision = decide_upsert(
            stored, source_seq=event.source_seq, content_hash=chash, meta_hash=mhash
        )
        if decision not in (Decision.CONTENT, Decision.METADATA):
            return self._nothing(event, decision, ctx)
        accepted = await self.state.record_accepted(
            event.tenant_id, event.document_id, event.source_seq, chash
        )
        if not accepted:  # a newer event moved the status on meanwhile
            return self._nothing(event, Decision.STALE, ctx)
        DECISIONS.labels(decision.value).inc()
        ctx.logger.info(
            "accepted",
            extra={
                "fields": {
                    "document_id": event.document_id,
                    "decision": decision.value,
                    "source_seq": event.source_seq,
                    "size_bytes": len(got.data),
                }
            },
        )
        fetched = fetched_event(
            event, meta=meta, data=got.data, content_hash=chash, change=decision
        )
        return [Output(topic=Topics.DOC_FETCHED.value, event=fetched)]

    async def _control(
        self, event: SourceDelete | SourceAclChange, ctx: StageContext
    ) -> list[Output]:
        stored = await self.state.get(event.tenant_id, event.document_id)
        decision = decide_control(stored, event)
        if decision is Decision.STALE:
            return self._nothing(event, decision, ctx)
        kind = "delete" if isinstance(event, SourceDelete) else "acl"
        DECISIONS.labels(kind).inc()
        return [Output(topic=Topics.DOC_CONTROL.value, event=control_event(event))]

    @staticmethod
    def _nothing(
        event: SourceUpsert | SourceDelete | SourceAclChange, decision: Decision, ctx: StageContext
    ) -> list[Output]:
        DECISIONS.labels(decision.value).inc()
        ctx.logger.info(
            "dropped",
            extra={
                "fields": {
                    "document_id": event.document_id,
                    "decision": decision.value,
                    "source_seq": event.source_seq,
                }
            },
        )
        return []
