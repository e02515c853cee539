"""Tenant fairness in the interactive lane (docs/lanes.md, "Tenant fairness"; ADR 0012).

The lanes keep bulk work from delaying edits, but one tenant can still flood the
interactive lane itself (a script re-saving 10k documents through the webhook, a
misconfigured source) and so delay every other tenant's edits. Each tenant therefore
has an **interactive budget**: a token bucket of ``rate`` changes per second holding at
most ``burst``. A content change (an upsert) within its tenant's budget stays
interactive; one over it is **demoted to the bulk lane**: it is still published and
processed, in full and in order, only behind the interactive work of everyone else.
Nothing is dropped and nothing is held in memory: the decision picks the topic a change
is written to, once, when it is written.

Only upserts are charged and demoted. A delete or an ACL change keeps its lane and
costs nothing: it takes the fast path to the indexer (no parsing, chunking or
embedding), and permission changes never wait (ADR 0002, 0007; ``runtime.lanes.demote``
keeps every ACL statement on ``doc.control`` interactive whatever carried it). Bulk
changes are never charged (they are in the bulk lane already).

Order is not this module's concern: a demoted older version that arrives after a newer
interactive one is stale by the one order rule (``ragline.order``), as any bulk re-send.

The buckets live in the process that decides (the webhook of each connector replica,
and each connector replica's stage for the partitions it owns), so with ``n`` replicas
a tenant gets up to ``n`` budgets: the budget bounds a flood, it is not a quota.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from ragline.config import Settings
from ragline.connector.metrics import LANE_DEMOTIONS
from ragline.events import BULK, INTERACTIVE, DocFetched, EventBase, Lane, SourceUpsert
from ragline.runtime.kafka_errors import kafka_errors
from ragline.runtime.lag import group_offsets
from ragline.runtime.lanes import lane_inputs, with_lane
from ragline.runtime.topology import TOPOLOGY, consumer_group

__all__ = ["BulkPacer", "InteractiveAdmission", "TenantBudget", "bulk_backlog", "demotable"]

_log = logging.getLogger("ragline.connector.fairness")

# how many tenants' buckets one process keeps; a bucket that has refilled to full is the
# same as none and is forgotten first, so only this many tenants *over* their budget at
# once could be forgotten early (each then starts again with a full burst)
DEFAULT_MAX_TENANTS = 10_000

_EPS = 1e-9  # float refills: a change exactly at the rate is within it

TENANT_BUDGET = "tenant_budget"  # demotion reasons (metric label values)
HEAVY = "heavy"


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float  # the time ``tokens`` was computed at (never goes back)
    over: bool = False  # the last change of this tenant was demoted


class TenantBudget:
    """A token bucket per tenant: ``rate`` tokens per second, at most ``burst``.

    Pure: the caller passes the time (a monotonic clock). A time earlier than the
    bucket's last one counts as that one (a clock never refunds, and never charges
    twice for one interval). Tenant ids are compared exactly, byte for byte: two ids
    that merely look alike (a zero-width character, a NUL, a different normalisation)
    are two tenants with two budgets."""

    def __init__(self, rate: float, burst: int, *, max_tenants: int = DEFAULT_MAX_TENANTS) -> None:
        if not (math.isfinite(rate) and rate >= 0):
            raise ValueError("rate must be a finite number >= 0")
        if burst < 1 or max_tenants < 1:
            raise ValueError("burst and max_tenants must be >= 1")
        self.rate = rate
        self.burst = burst
        self.max_tenants = max_tenants
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    @property
    def enabled(self) -> bool:
        """A rate of 0 turns the budget off: every change is admitted."""
        return self.rate > 0

    def __len__(self) -> int:
        return len(self._buckets)

    def tokens(self, tenant: str, now: float) -> float:
        """What ``tenant`` may spend at ``now`` (read only)."""
        b = self._buckets.get(tenant)
        if b is None:
            return float(self.burst)
        return min(float(self.burst), b.tokens + max(0.0, now - b.at) * self.rate)

    def charge(self, tenant: str, now: float) -> tuple[bool, bool]:
        """Spend one token of ``tenant`` at ``now``: (admitted, newly over its budget)."""
        if not self.enabled:
            return True, False
        b = self._buckets.get(tenant)
        if b is None:
            self._forget_some(now)
            b = self._buckets[tenant] = _Bucket(tokens=float(self.burst), at=now)
        else:
            self._buckets.move_to_end(tenant)
        if now > b.at:
            b.tokens = min(float(self.burst), b.tokens + (now - b.at) * self.rate)
            b.at = now
        if b.tokens >= 1.0 - _EPS:
            b.tokens = max(0.0, b.tokens - 1.0)
            b.over = False
            return True, False
        newly = not b.over
        b.over = True
        return False, newly

    def _forget_some(self, now: float) -> None:
        """Make room for one more tenant: forget full buckets (no loss: a full bucket is
        what a new one is), then, if still full, the least recently charged."""
        if len(self._buckets) < self.max_tenants:
            return
        full = [t for t, b in self._buckets.items() if self._full(b, now)]
        for t in full:
            del self._buckets[t]
        while len(self._buckets) >= self.max_tenants:
            self._buckets.popitem(last=False)

    def _full(self, b: _Bucket, now: float) -> bool:
        return b.tokens + max(0.0, now - b.at) * self.rate >= self.burst


def demotable(event: EventBase) -> bool:
    """Only content travels by budget: an upsert (or the doc.fetched it becomes) in the
    interactive lane. Deletes and ACL changes keep their lane (they are never charged)."""
    return isinstance(event, SourceUpsert | DocFetched) and event.priority == INTERACTIVE


_E = TypeVar("_E", bound=EventBase)


class InteractiveAdmission:
    """Where the connector decides an interactive change's lane: ``place`` returns the
    event as it is (within budget, or not demotable) or in the bulk lane.

    ``heavy_bytes`` (0 = off): a ``DocFetched`` whose content is larger goes bulk
    without being charged (it never holds up the interactive lane; ADR 0012)."""

    def __init__(
        self,
        budget: TenantBudget,
        *,
        heavy_bytes: int = 0,
        clock: Callable[[], float] = time.monotonic,
        where: str = "stage",
    ) -> None:
        self.budget = budget
        self.heavy_bytes = heavy_bytes
        self.clock = clock
        self.where = where

    def lane(self, event: EventBase) -> tuple[Lane, str | None]:
        """The lane ``event`` travels in and why it was demoted (None: not demoted).
        Charges the tenant's budget for an interactive upsert that is not heavy."""
        if not demotable(event):
            return event.priority, None
        if isinstance(event, DocFetched) and 0 < self.heavy_bytes < event.size_bytes:
            return BULK, HEAVY
        admitted, newly = self.budget.charge(event.tenant_id, self.clock())
        if admitted:
            return INTERACTIVE, None
        if newly:  # once per run of demotions: the operator learns which tenant
            _log.info(
                "tenant over its interactive budget: changes go bulk",
                extra={
                    "fields": {
                        "tenant_id": event.tenant_id,
                        "where": self.where,
                        "rate": self.budget.rate,
                        "burst": self.budget.burst,
                    }
                },
            )
        return BULK, TENANT_BUDGET

    def place(self, event: _E) -> _E:
        lane, why = self.lane(event)
        if why is None:
            return event
        LANE_DEMOTIONS.labels(why, self.where).inc()
        return with_lane(event, lane)


class BulkPacer:
    """Publish-time pacing of a bulk publisher (``ragline sync``) by the pipeline's bulk
    backlog, so concurrent backfills of several tenants take turns (docs/lanes.md,
    "Tenant fairness"; ADR 0012).

    Before every ``step``-th publish it reads the backlog (records on the ``.bulk`` topics
    past every stage's bulk group) and waits while it is at least ``max_backlog``. Two
    syncs waiting on the same backlog publish a step each as it drains, so the second
    tenant's documents queue behind at most about ``max_backlog`` + a step per running
    sync, not behind the whole of the first tenant's backfill. The sync's own events
    wait in its source (not in memory) until published; nothing is dropped.

    A pipeline that is not draining (its stages stopped) would hold a sync forever: when
    no stage committed any bulk record for ``stall_s``, pacing stops for the rest of the
    run (logged) and the sync publishes as it did before pacing existed.

    ``backlog()`` returns (records waiting, records consumed so far): ``bulk_backlog``."""

    def __init__(
        self,
        max_backlog: int,
        backlog: Callable[[], Awaitable[tuple[int, int]]],
        *,
        step: int | None = None,
        poll_s: float = 1.0,
        stall_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.max_backlog = max_backlog
        self.backlog = backlog
        self.step = step if step is not None else max(1, max_backlog // 10)
        self.poll_s = poll_s
        self.stall_s = stall_s
        self.clock = clock
        self.sleep = sleep
        self.stalled = False
        self.waited_s = 0.0
        self.readings = 0
        self._left = 0  # publishes before the next reading

    @property
    def enabled(self) -> bool:
        return self.max_backlog > 0 and not self.stalled

    async def admit(self) -> None:
        """Return when the next event may be published."""
        if not self.enabled:
            return
        if self._left > 0:
            self._left -= 1
            return
        started = self.clock()
        last: int | None = None
        since = started
        while True:
            n, consumed = await self.backlog()
            self.readings += 1
            if n < self.max_backlog:
                break
            now = self.clock()
            if consumed != last:  # the stages committed something meanwhile
                last, since = consumed, now
            elif now - since >= self.stall_s:
                self.stalled = True
                _log.warning(
                    "bulk backlog not draining: publishing without pacing",
                    extra={"fields": {"backlog": n, "max_backlog": self.max_backlog}},
                )
                break
            await self.sleep(self.poll_s)
        self.waited_s += self.clock() - started
        self._left = self.step - 1


async def bulk_backlog(settings: Settings) -> tuple[int, int]:
    """The bulk work queued in the pipeline: (records on every stage's ``.bulk`` input
    topics past its bulk group's committed offsets, the sum of those offsets). A document
    counts once per stage it waits for; the second number grows while stages consume."""
    waiting = done = 0
    prefix = settings.kafka_topic_prefix
    for svc in TOPOLOGY:
        topics = lane_inputs(tuple(str(t) for t in svc.consumes)).get(BULK)
        if not topics:
            continue
        group = consumer_group(svc.name, prefix, BULK)
        with kafka_errors(f"read the offsets of {group} at {settings.kafka_bootstrap}"):
            for lag, at in (await group_offsets(settings, group, topics)).values():
                waiting += lag
                done += at
    return waiting, done
