"""What applying one event did: recorded in the ledger, turned into ``doc.indexed``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragline.events import DocIndexed, EventBase, IndexAction

__all__ = ["Outcome", "indexed_event"]


class Outcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    action: IndexAction
    generation: int
    chunk_count: int
    acl_groups_before: tuple[str, ...] = ()
    acl_groups_after: tuple[str, ...] = ()
    skipped: bool = False
    # documents whose OpenSearch copy this change touched (itself, superseded ones)
    touched: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def indexed_event(
    source: EventBase, outcome: Outcome, *, source_event_at: datetime | None
) -> DocIndexed:
    """``doc.indexed`` for ``source``; its id is derived from the input event's id, so a
    redelivered input yields the same output id (consumers can deduplicate)."""
    return DocIndexed(
        **source.derived("doc.indexed"),
        action=outcome.action,
        generation=outcome.generation,
        chunk_count=outcome.chunk_count,
        acl_groups_before=outcome.acl_groups_before,
        acl_groups_after=outcome.acl_groups_after,
        skipped=outcome.skipped,
        source_event_at=source_event_at,
    )
