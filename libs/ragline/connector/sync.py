"""``ragline sync``: reconcile a source with what Postgres holds.

The recovery path after a broker loss (events published but never processed are gone)
and the safety net for a watcher that was down: documents the source has but Postgres
lacks or holds in an older version are re-emitted as upserts on ``source.changes``;
documents Postgres holds that the source no longer has get a delete. Re-emitting goes
through the connector like any change, so the dedup and ordering rules live in one place.

By default a document whose ``source_seq`` and metadata hash match what is indexed is
taken as in sync; ``checksum=True`` also hashes its bytes (like ``rsync --checksum``).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from tqdm import tqdm

from ragline.config import Settings
from ragline.connector.fairness import BulkPacer, bulk_backlog
from ragline.connector.intake import StoredState
from ragline.connector.metrics import SYNC_ACTIONS
from ragline.connector.source import EventSink, SourceItem, SyncSource
from ragline.errors import ConfigError
from ragline.events import BULK, Lane, Topics
from ragline.runtime.lanes import with_lane

__all__ = [
    "DeletesRefused",
    "SyncAction",
    "SyncPlan",
    "build_plan",
    "classify",
    "delete_refusal",
    "execute",
    "sync_source",
    "to_delete",
]

_LIVE_STATUS = frozenset({"accepted", "failed", "quarantined"})


class SyncAction(StrEnum):
    MISSING = "missing"  # source has it, Postgres has no live version: re-emit
    STALE = "stale"  # Postgres holds an older version or other metadata: re-emit
    DELETE = "delete"  # Postgres holds it, the source does not: emit a delete
    OK = "ok"  # in sync
    VERIFY = "verify"  # seq and metadata match; only a checksum can tell more
    SHADOWED = "shadowed"  # source version is older than a newer delete/version held
    QUARANTINED = "quarantined"  # this version was quarantined: not retried by default
    HELD = "held"  # the source cannot offer it right now (being written, bad metadata)


_EMIT = frozenset({SyncAction.MISSING, SyncAction.STALE})


class DeletesRefused(ConfigError):
    """The plan would delete documents this source cannot be shown to own, or more than
    a small share of the source: nothing was published (``--allow-deletes``)."""


def classify(
    item: SourceItem, st: StoredState | None, *, retry_quarantined: bool = False
) -> SyncAction:
    if not item.available:
        return SyncAction.HELD
    if st is None:
        return SyncAction.MISSING
    seq = item.source_seq
    pending = st.pending_seq or 0
    if st.pending_status == "quarantined" and pending >= seq:
        return SyncAction.MISSING if retry_quarantined else SyncAction.QUARANTINED
    if (st.status == "deleted" and (st.source_seq or 0) > seq) or (
        st.pending_status == "deleted" and pending > seq
    ):
        return SyncAction.SHADOWED
    if not st.indexed:
        return SyncAction.MISSING
    stored_seq = st.source_seq or 0
    if stored_seq < seq:
        return SyncAction.STALE
    if st.meta_hash != item.meta_hash:
        return SyncAction.STALE if stored_seq == seq else SyncAction.SHADOWED
    return SyncAction.VERIFY


def _live(st: StoredState) -> bool:
    return st.indexed or st.pending_status in _LIVE_STATUS


def to_delete(seen: set[str], stored: Mapping[str, StoredState]) -> list[str]:
    """Documents Postgres holds live that the source did not list (held ones are listed)."""
    return sorted(doc_id for doc_id, st in stored.items() if doc_id not in seen and _live(st))


def delete_refusal(
    deletes: list[str], foreign: list[str], live: int, *, max_share: float
) -> str | None:
    """Why a plan's deletes need ``--allow-deletes`` (None: they do not). ``foreign``: the
    deletes the source cannot be shown to own (created from another folder or system
    sharing the source name); ``live``: the source's live documents in Postgres."""
    if not deletes:
        return None
    if foreign:
        return (
            f"{len(foreign)} of the {len(deletes)} documents to delete were not created "
            "from this source as configured now (another folder with the same source "
            "name?): pass --source to name this one, or --allow-deletes to delete them"
        )
    if len(deletes) > max_share * live:
        return (
            f"the plan deletes {len(deletes)} of the source's {live} documents, more than "
            f"{max_share:.0%} (RAGLINE_CONNECTOR_SYNC_MAX_DELETE_SHARE): check the list, "
            "then pass --allow-deletes"
        )
    return None


@dataclass(kw_only=True)
class SyncPlan:
    emit: list[tuple[SyncAction, SourceItem]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    unreadable: int = 0
    # documents the source offers to nobody (no acl_groups): indexed, readable by no one
    no_readers: list[str] = field(default_factory=list)
    # set by sync_source: why the deletes need --allow-deletes (None: they do not)
    refusal: str | None = None


def _bar(desc: str, total: int | None, progress: bool) -> tqdm[None]:
    return tqdm(total=total, desc=desc, unit="doc", disable=not progress, file=sys.stderr)


async def build_plan(
    source: SyncSource,
    stored: Mapping[str, StoredState],
    *,
    checksum: bool = False,
    retry_quarantined: bool = False,
    allow_empty: bool = False,
    progress: bool = True,
) -> SyncPlan:
    plan = SyncPlan()
    seen: set[str] = set()
    with _bar("compare", None, progress) as bar:
        async for item in source.items():
            seen.add(item.document_id)
            st = stored.get(item.document_id)
            action = classify(item, st, retry_quarantined=retry_quarantined)
            if action is SyncAction.VERIFY:
                action = SyncAction.OK
                if checksum and st is not None:
                    digest = await source.content_hash(item)
                    if digest is None:
                        plan.unreadable += 1
                    elif digest != st.content_hash:
                        same_seq = (st.source_seq or 0) == item.source_seq
                        action = SyncAction.STALE if same_seq else SyncAction.SHADOWED
            plan.counts[action.value] += 1
            if item.available and item.acl_groups is not None and not item.acl_groups:
                plan.no_readers.append(item.document_id)
            if action in _EMIT:
                plan.emit.append((action, item))
            bar.update(1)
    plan.deletes = to_delete(seen, stored)
    plan.counts[SyncAction.DELETE.value] += len(plan.deletes)
    live_in_source = sum(1 for i in seen if i not in plan.deletes)
    if not allow_empty and live_in_source == 0 and plan.deletes:
        raise ConfigError(
            f"the source lists no documents but Postgres holds {len(plan.deletes)}: refusing "
            "to delete them all (is the source mounted?); pass --allow-empty to proceed"
        )
    return plan


async def execute(
    plan: SyncPlan,
    source: SyncSource,
    sink: EventSink,
    *,
    stored: Mapping[str, StoredState],
    progress: bool = True,
    lane: Lane = BULK,
    pacer: BulkPacer | None = None,
) -> Counter[str]:
    """Publish the plan; counts what was actually published (and what was unreadable).
    A sync is bulk work: its events travel in the bulk lane unless told otherwise
    (runtime/lanes.py), so it never delays interactive changes; ``pacer`` holds each
    publish while the pipeline's bulk backlog is full (tenants' backfills take turns)."""
    done: Counter[str] = Counter()
    topic = Topics.SOURCE_CHANGES.value
    with _bar("publish", len(plan.emit) + len(plan.deletes), progress) as bar:
        for action, item in plan.emit:
            if pacer is not None:
                await pacer.admit()
            event = await source.upsert_event(item)
            if event is None:
                done["unreadable"] += 1
            else:
                await sink.publish(topic, with_lane(event, lane))
                done[action.value] += 1
                SYNC_ACTIONS.labels(action.value, "false").inc()
            bar.update(1)
        for doc_id in plan.deletes:
            if pacer is not None:
                await pacer.admit()
            st = stored.get(doc_id)
            newest = st.newest_seq(include_acl=True) if st is not None else None
            await sink.publish(topic, with_lane(source.delete_event(doc_id, newest), lane))
            done[SyncAction.DELETE.value] += 1
            SYNC_ACTIONS.labels(SyncAction.DELETE.value, "false").inc()
            bar.update(1)
    return done


def record_dry_run(plan: SyncPlan) -> None:
    for action, n in plan.counts.items():
        if action in (SyncAction.MISSING, SyncAction.STALE, SyncAction.DELETE):
            SYNC_ACTIONS.labels(action, "true").inc(n)


async def sync_source(
    settings: Settings,
    source: SyncSource,
    *,
    checksum: bool = False,
    retry_quarantined: bool = False,
    allow_empty: bool = False,
    progress: bool = True,
    dry_run: bool = False,
    on_plan: Callable[[SyncPlan], None] | None = None,
    lane: Lane = BULK,
    max_bulk_backlog: int = 0,
    allow_deletes: bool = False,
    max_delete_share: float = 0.1,
) -> tuple[SyncPlan, Counter[str] | None]:
    """Compare ``source`` with Postgres and publish the plan to ``source.changes``
    (``ragline sync``, ``ragline up``). ``on_plan`` sees the plan before anything is
    published; a dry run publishes nothing (the published counts are then None).
    ``max_bulk_backlog`` (bulk lane only; 0 = off): publish while the pipeline's bulk
    backlog is below it (``BulkPacer``). Unless ``allow_deletes``, a plan deleting a
    document the source cannot be shown to own, or more than ``max_delete_share`` of the
    source's live documents, raises ``DeletesRefused`` after ``on_plan`` saw it (its
    ``refusal`` says why) and publishes nothing."""
    from ragline.connector.state import StateStore
    from ragline.runtime.publisher import EventPublisher

    store = StateStore(settings.admin_dsn(), max_size=1)
    await store.open()
    try:
        stored = await store.list_source(source.tenant_id, source.name)
        uris = await store.source_uris(source.tenant_id, source.name)
    finally:
        await store.close()
    plan = await build_plan(
        source,
        stored,
        checksum=checksum,
        retry_quarantined=retry_quarantined,
        allow_empty=allow_empty,
        progress=progress,
    )
    if not allow_deletes:
        foreign = [d for d in plan.deletes if not source.owns(uris.get(d))]
        live = sum(1 for st in stored.values() if _live(st))
        plan.refusal = delete_refusal(plan.deletes, foreign, live, max_share=max_delete_share)
    if on_plan is not None:
        on_plan(plan)
    if plan.refusal is not None and not dry_run:
        raise DeletesRefused(plan.refusal)
    if dry_run:
        record_dry_run(plan)
        return plan, None
    pacer = BulkPacer(max_bulk_backlog if lane == BULK else 0, lambda: bulk_backlog(settings))
    # a plan of at most one step adds no more than a paced sync would at once: no reading
    paced = pacer if len(plan.emit) + len(plan.deletes) > pacer.step else None
    async with EventPublisher(settings, service="sync") as pub:
        done = await execute(
            plan, source, pub, stored=stored, progress=progress, lane=lane, pacer=paced
        )
    return plan, done
