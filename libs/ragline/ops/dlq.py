"""``ragline dlq list | replay | purge``: inspect dead letters, send them back to the
topic they failed on, or drop them; see ``dlq_select`` for how filters and the tool's
consumer-group offsets fit together.

Delivery is at least once: a run that dies between publishing and committing replays
those records again next time, which the idempotent stages make harmless.
"""

from __future__ import annotations

import base64
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from tqdm import tqdm

from ragline.config import Settings
from ragline.events import BULK, Lane, Topics, dlq_topic, lane_of_topic, lane_topic
from ragline.ops.dlq_reader import DlqEntry, DlqReader, PartitionRange
from ragline.ops.dlq_select import PartitionPlan, Selector, plan_partition
from ragline.ops.id_digest import id_digest_key
from ragline.ops.settings import OpsSettings
from ragline.runtime.publisher import EventPublisher

__all__ = ["REPLAY_HEADER", "REQUEUE_HEADER", "Action", "DlqReport", "TopicReport", "run_dlq"]

REPLAY_HEADER = "ragline-replay-of"  # <dlq topic>:<partition>:<offset> of the dead letter
REQUEUE_HEADER = "ragline-requeued-from"  # <partition>:<offset> of the earlier copy
_PIPELINE_TOPICS = frozenset(t.value for t in Topics)


class Action(StrEnum):
    LIST = "list"
    REPLAY = "replay"
    PURGE = "purge"


@dataclass(kw_only=True)
class TopicReport:
    topic: str
    pending: int = 0  # pending for the group when the run began
    selected: int = 0  # pending records the filters select
    handled: int = 0  # replayed or purged (or would be, with --dry-run)
    requeued: int = 0  # kept records appended again so the commit could pass them
    unreplayable: int = 0  # selected but not replayable (not a DeadLetter, odd target)
    by_error_class: Counter[str] = field(default_factory=Counter)
    by_stage: Counter[str] = field(default_factory=Counter)
    oldest: datetime | None = None
    newest: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "pending": self.pending,
            "selected": self.selected,
            "handled": self.handled,
            "requeued": self.requeued,
            "unreplayable": self.unreplayable,
            "by_error_class": dict(self.by_error_class),
            "by_stage": dict(self.by_stage),
            "oldest": self.oldest.isoformat() if self.oldest else None,
            "newest": self.newest.isoformat() if self.newest else None,
        }

    def see(self, entry: DlqEntry) -> None:
        self.selected += 1
        self.by_error_class[entry.error_class] += 1
        self.by_stage[entry.stage] += 1
        at = entry.failed_at
        self.oldest = at if self.oldest is None or at < self.oldest else self.oldest
        self.newest = at if self.newest is None or at > self.newest else self.newest


@dataclass(kw_only=True)
class DlqReport:
    action: Action
    group: str
    dry_run: bool
    topics: list[TopicReport]
    records: list[dict[str, Any]]  # safe summaries of selected records (list only)

    def total(self, attr: str) -> int:
        return sum(int(getattr(t, attr)) for t in self.topics)


def replayable(entry: DlqEntry) -> bool:
    """Only a DeadLetter whose source topic (either lane) is the pipeline topic this .dlq
    belongs to."""
    dl = entry.letter
    if dl is None:
        return False
    base = lane_of_topic(dl.topic)[0]
    return base in _PIPELINE_TOPICS and entry.topic == dlq_topic(base)


async def _replay(pub: EventPublisher, entry: DlqEntry, lane: Lane = BULK) -> None:
    """Send the dead letter back to its topic, in ``lane`` (bulk by default: a replay is
    bulk work and must not delay interactive changes; the seq guards keep it from
    overwriting anything newer)."""
    dl = entry.letter
    assert dl is not None  # replayable() checked it
    headers = dict(dl.original_headers)
    headers[REPLAY_HEADER] = f"{entry.topic}:{entry.partition}:{entry.offset}"
    body = base64.b64decode(dl.original_b64)
    target = lane_topic(lane_of_topic(dl.topic)[0], lane)
    await pub.publish_raw(target, body, key=dl.key, headers=headers)


async def _requeue(pub: EventPublisher, entry: DlqEntry) -> None:
    headers = dict(entry.headers)  # a claim-check header keeps the stub a stub
    headers[REQUEUE_HEADER] = f"{entry.partition}:{entry.offset}"
    await pub.publish_raw(entry.topic, entry.value, key=entry.key, headers=headers)


async def run_dlq(
    settings: Settings,
    action: Action,
    *,
    topics: tuple[str, ...] = (),
    selector: Selector | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    group: str | None = None,
    progress: bool = True,
    ops: OpsSettings,
    lane: Lane = BULK,
) -> DlqReport:
    selector = selector or Selector()
    group = group or ops.dlq_group
    id_key = id_digest_key(settings, ops) if action is Action.LIST else b""
    now = datetime.now(UTC)
    async with DlqReader(settings, group=group, read_timeout_s=ops.dlq_read_timeout_s) as reader:
        ranges = await reader.ranges(await reader.existing(topics))
        reports = {r.topic: TopicReport(topic=r.topic) for r in ranges}
        records: list[dict[str, Any]] = []
        decisions: dict[tuple[str, int], list[tuple[int, bool]]] = {}
        with tqdm(
            total=sum(r.pending for r in ranges), desc="scan", unit="rec", disable=not progress
        ) as bar:
            for rng in ranges:
                rep = reports[rng.topic]
                rep.pending += rng.pending
                marks: list[tuple[int, bool]] = []
                async for entry in reader.entries(rng):
                    bar.update(1)
                    chosen = selector.matches(entry, now)
                    if chosen:
                        rep.see(entry)
                        if action is Action.LIST and (limit is None or len(records) < limit):
                            records.append(entry.summary(id_key=id_key))
                        if action is Action.REPLAY and not replayable(entry):
                            rep.unreplayable += 1
                            chosen = False
                    marks.append((entry.offset, chosen))
                decisions[(rng.topic, rng.partition)] = marks
        report = DlqReport(
            action=action,
            group=group,
            dry_run=dry_run,
            topics=list(reports.values()),
            records=records,
        )
        if action is Action.LIST:
            return report
        plans: list[tuple[PartitionRange, PartitionPlan]] = []
        budget = limit
        for rng in ranges:
            plan, n = plan_partition(decisions[(rng.topic, rng.partition)], budget=budget)
            budget = None if budget is None else budget - n
            reports[rng.topic].handled += n
            reports[rng.topic].requeued += len(plan.requeue)
            if plan.commit_to is not None:
                plans.append((rng, plan))
        if not dry_run and plans:
            await _execute(settings, reader, action, plans, ops, progress, lane)
        return report


async def _execute(
    settings: Settings,
    reader: DlqReader,
    action: Action,
    plans: list[tuple[PartitionRange, PartitionPlan]],
    ops: OpsSettings,
    progress: bool,
    lane: Lane = BULK,
) -> None:
    total = sum(len(p.handle) + len(p.requeue) for _, p in plans)
    async with EventPublisher(settings, service="dlq-tool") as pub:
        with tqdm(total=total, desc=action.value, unit="rec", disable=not progress) as bar:
            for rng, plan in plans:
                assert plan.commit_to is not None
                if action is Action.PURGE and not plan.requeue:
                    await reader.commit(rng, plan.commit_to)  # nothing to publish: skip reading
                    bar.update(len(plan.handle))
                    continue
                since_commit = 0
                async for entry in reader.entries(rng, stop=plan.commit_to):
                    if entry.offset in plan.handle:
                        if action is Action.REPLAY:
                            await _replay(pub, entry, lane)
                    elif entry.offset in plan.requeue:
                        await _requeue(pub, entry)
                    bar.update(1)
                    since_commit += 1
                    if since_commit >= ops.dlq_commit_every:
                        await reader.commit(rng, entry.offset + 1)
                        since_commit = 0
                await reader.commit(rng, plan.commit_to)
