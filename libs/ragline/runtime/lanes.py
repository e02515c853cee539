"""Priority lanes (docs/adr/0012-priority-lanes.md): interactive work first, bulk after.

Every laned topic ``T`` (``events.LANED_TOPICS``) has a bulk twin ``T.bulk``, keyed by
``document_id`` like ``T``. A stage runs two Kafka consumers: the interactive one (group
``ragline-<stage>``, the topics it always had) and the bulk one (group
``ragline-<stage>-bulk``, the ``.bulk`` topics). Each is sequential and commits only
what it handled, exactly as before; the bulk one asks ``LaneGate.wait_turn`` before every
batch and so only starts work when the interactive lane is idle (nothing being handled,
nothing fetched-but-unhandled on its partitions). A bulk batch already running is not
interrupted: interactive work runs beside it (stages do their CPU work off the event
loop), so an interactive record waits for at most one bulk batch's share of the CPU,
never for the bulk backlog. ``bulk_max_wait_s`` bounds how long bulk yields, so a
continuous interactive stream cannot starve it forever.

Order across lanes is not Kafka's to keep (two topics): a document's older version may
arrive after a newer one. The seq guards (``indexing/order.py``) decide what applies,
as they already do across ``doc.embedded`` / ``doc.control`` / ``doc.quarantined``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragline.errors import BackendUnavailable
from ragline.events import BULK, INTERACTIVE, LANED_TOPICS, EventBase, Lane, Topics, lane_topic
from ragline.runtime.kafka_errors import kafka_errors

__all__ = ["LaneGate", "LaneSettings", "demote", "lane_inputs", "with_lane"]


_DEFAULT_MAX_WAIT_S = 30.0
_DEFAULT_POLL_S = 0.02


class LaneSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_LANES_", extra="ignore", frozen=True)

    bulk_max_wait_s: float = Field(
        default=_DEFAULT_MAX_WAIT_S,
        gt=0,
        description="longest a bulk batch yields to a busy interactive lane (anti-starvation)",
    )
    poll_s: float = Field(
        default=_DEFAULT_POLL_S, gt=0, description="how often a waiting bulk batch looks"
    )
    bulk_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="nice increment of a stage's bulk worker threads (runtime/priority.py); "
        "0: bulk work runs at the same CPU priority as interactive work",
    )


def lane_inputs(topics: tuple[str, ...]) -> dict[Lane, tuple[str, ...]]:
    """The logical topics a stage consumes per lane (no bulk lane: no bulk consumer)."""
    bulk = tuple(lane_topic(t, BULK) for t in topics if t in LANED_TOPICS)
    return {INTERACTIVE: topics, BULK: bulk} if bulk else {INTERACTIVE: topics}


_E = TypeVar("_E", bound=EventBase)


def with_lane(event: _E, lane: Lane) -> _E:
    """``event`` in ``lane`` (a copy; the same event if it already is)."""
    return event if event.priority == lane else event.model_copy(update={"priority": lane})


def demote(event: _E, lane: Lane, topic: str = "") -> _E:
    """The lane of a stage's output ``event`` on ``topic`` for an input of ``lane``.

    A lane only goes down the pipeline: work that came in on the bulk lane stays bulk,
    interactive work may be demoted (a heavy document). One exception: an ACL statement
    on ``doc.control`` is always interactive, whatever carried it (a sync that finds a
    narrowed ACL): permission changes never wait (docs/adr/0002, 0007)."""
    if topic == Topics.DOC_CONTROL and getattr(event, "acl", None) is not None:
        return with_lane(event, INTERACTIVE)
    return with_lane(event, BULK) if lane == BULK else event


class LaneGate:
    """Interactive first: ``interactive()`` brackets interactive handling; the bulk
    consumer awaits ``wait_turn()`` before each batch."""

    def __init__(self, settings: LaneSettings | None = None) -> None:
        # the defaults unless the entry point read RAGLINE_LANES_* (`ragline run`)
        self.max_wait_s = settings.bulk_max_wait_s if settings else _DEFAULT_MAX_WAIT_S
        self.poll_s = settings.poll_s if settings else _DEFAULT_POLL_S
        self._busy = 0
        self.consumer: Any = None  # the interactive AIOKafkaConsumer, once started
        self.waited_s = 0.0  # total time bulk yielded (tests, metrics)

    @contextmanager
    def interactive(self) -> Iterator[None]:
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    async def _pending(self) -> bool:
        """Records on the interactive partitions not yet handed to the application."""
        consumer = self.consumer
        if consumer is None:
            return False
        for tp in list(consumer.assignment()):
            high = consumer.highwater(tp)
            if high is None:
                continue
            try:
                with kafka_errors("read a position"):
                    pos = await asyncio.wait_for(consumer.position(tp), 0.2)
            except BackendUnavailable:  # rebalancing, no position yet: do not wait
                continue
            if high > pos:
                return True
        return False

    async def busy(self) -> bool:
        return self._busy > 0 or await self._pending()

    async def wait_turn(self) -> float:
        """Wait until the interactive lane is idle (at most ``bulk_max_wait_s``); returns
        the seconds waited."""
        started = time.monotonic()
        deadline = started + self.max_wait_s
        while time.monotonic() < deadline:
            if not await self.busy():
                break
            await asyncio.sleep(self.poll_s)
        waited = time.monotonic() - started
        self.waited_s += waited
        return waited
