"""The interface a source implements so ``ragline sync`` can reconcile it with Postgres.

A source lists its documents cheaply (id, source_seq, metadata hash), and on demand
reads one to hash it or to build its upsert event. The filesystem source is the first
implementation; a wiki or ticket system plugs in by implementing the same protocol.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from ragline.events import EventBase, SourceDelete, SourceUpsert

__all__ = ["EventSink", "SourceItem", "SyncSource"]


class EventSink(Protocol):
    """Where sources publish: ``ragline.runtime.publisher.EventPublisher`` in production."""

    async def publish(self, topic: str, event: EventBase) -> None: ...


@dataclass(frozen=True, kw_only=True)
class SourceItem:
    document_id: str
    source_seq: int
    meta_hash: str  # ragline.hashing.meta_hash of the DocumentMeta the upsert will carry
    handle: Any = None  # whatever the source needs to read the document later
    # False: the source has the document but cannot offer it right now (being written,
    # invalid metadata): sync neither re-emits nor deletes it
    available: bool = True
    # the readers the upsert will grant (None: the source does not say); () = nobody
    acl_groups: tuple[str, ...] | None = None


class SyncSource(Protocol):
    @property
    def name(self) -> str:
        """The source slug: every document id of this source starts with ``<name>:``."""
        ...

    @property
    def tenant_id(self) -> str: ...

    def items(self) -> AsyncIterator[SourceItem]:
        """Every document the source holds now."""
        ...

    async def content_hash(self, item: SourceItem) -> str | None:
        """ragline.hashing.content_hash of the document now (None: unreadable right now)."""
        ...

    async def upsert_event(self, item: SourceItem) -> SourceUpsert | None:
        """The upsert that re-emits the document (None: unreadable right now)."""
        ...

    def delete_event(self, document_id: str, stored_seq: int | None) -> SourceDelete:
        """A delete newer than ``stored_seq`` for a document the source no longer has."""
        ...

    def owns(self, uri: str | None) -> bool:
        """Could a stored document with this ``uri`` have come from this source as
        configured now? False marks a delete as foreign (another folder or system
        that shares the source name): ``ragline sync`` then refuses without
        ``--allow-deletes``."""
        ...
