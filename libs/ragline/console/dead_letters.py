"""The dead-letters page: ``ragline dlq`` (``ragline.ops.dlq.run_dlq``) behind buttons.

Listing never shows a payload (``DlqEntry.summary``); a document id is shown only as
its source prefix and a hash, because an id can carry what the scanner would have
flagged (a secret in a file name)."""

from __future__ import annotations

from typing import Any

from ragline.config import Settings
from ragline.events import Lane
from ragline.hashing import sha256_hex
from ragline.ops.dlq import Action, DlqReport, run_dlq
from ragline.ops.dlq_select import Selector
from ragline.ops.settings import OpsSettings

__all__ = ["dead_letters", "redact_document_id", "resolve_dead_letters"]


def redact_document_id(document_id: str | None) -> str | None:
    if document_id is None:
        return None
    source, _, _ = document_id.partition(":")
    return f"{source}:…#{sha256_hex(document_id)[:12]}"


def _topic_json(report: DlqReport) -> list[dict[str, Any]]:
    return [t.to_json() for t in report.topics]


async def dead_letters(
    settings: Settings,
    ops: OpsSettings,
    *,
    topics: tuple[str, ...] = (),
    selector: Selector | None = None,
    limit: int = 100,
) -> dict[str, Any]:
    report = await run_dlq(
        settings,
        Action.LIST,
        topics=topics,
        selector=selector,
        limit=limit,
        progress=False,
        ops=ops,
    )
    records = []
    for r in report.records:
        rec = dict(r)
        rec["document"] = redact_document_id(rec.pop("document_id"))
        records.append(rec)
    return {"group": report.group, "topics": _topic_json(report), "records": records}


async def resolve_dead_letters(
    settings: Settings,
    ops: OpsSettings,
    action: Action,
    *,
    topics: tuple[str, ...],
    selector: Selector,
    dry_run: bool,
    lane: Lane = "bulk",
) -> dict[str, Any]:
    """Replay or purge what ``selector`` selects on ``topics``; ``dry_run`` says how
    many would be handled (the confirmation step shows it)."""
    report = await run_dlq(
        settings,
        action,
        topics=topics,
        selector=selector,
        dry_run=dry_run,
        progress=False,
        ops=ops,
        lane=lane,
    )
    return {
        "action": action.value,
        "dry_run": dry_run,
        "handled": report.total("handled"),
        "requeued": report.total("requeued"),
        "unreplayable": report.total("unreplayable"),
        "topics": _topic_json(report),
    }
