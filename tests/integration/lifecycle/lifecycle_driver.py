"""The whole pipeline in one process, driven message by message (a uniquely named module,
imported directly by the lifecycle tests).

Every consumer stage (connector, parser, scanner, chunker, enricher, embedder, indexer)
is the real ``Stage`` on the real stack (Postgres, OpenSearch); only Kafka is replaced by
one FIFO queue per topic and lane (``<topic>.bulk`` for bulk events, as the publisher
routes them), so a test decides the interleaving: which topic delivers next
(deletes and ACL changes on ``doc.control`` may overtake content on the slow path, as
they can in production), how many records form a batch, which batch is delivered twice
(a consumer killed after its effect and before its offset commit), and when a stage is
restarted (a new instance: nothing survives but what it wrote to the stores).

Each message goes through JSON and the topic's contract exactly as the runtime reads it
(``input_adapter``); a ``QuarantineError`` becomes ``doc.quarantined`` as
``runtime.consumer`` builds it; what keeps failing is recorded as a dead letter.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ragline.config import Settings
from ragline.errors import PermanentError, QuarantineError, TransientError
from ragline.events import (
    BULK,
    EventBase,
    Topics,
    input_adapter,
    lane_of_topic,
    lane_topic,
)
from ragline.runtime.lanes import demote, lane_inputs, with_lane
from ragline.runtime.stage import Output, Stage, StageContext, quarantined_event

__all__ = ["DeadLetter", "Driver", "StageFactory"]

StageFactory = Callable[[], Stage]
_MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class DeadLetter:
    stage: str
    topic: str
    document_id: str | None
    error: str


def _retriable(exc: BaseException) -> bool:  # the runtime's rule (runtime.consumer)
    if isinstance(exc, TransientError):
        return True
    return not isinstance(exc, PermanentError | ValidationError | ValueError | TypeError)


@dataclass
class Driver:
    """``publish`` source changes, then ``deliver`` batches until ``idle``."""

    settings: Settings
    factories: dict[str, StageFactory]
    stages: dict[str, Stage] = field(default_factory=dict)
    queues: dict[str, deque[bytes]] = field(default_factory=dict)
    history: dict[str, list[bytes]] = field(default_factory=dict)
    dead: list[DeadLetter] = field(default_factory=list)
    delivered: int = 0
    restarts: int = 0
    crashes: int = 0
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("test.lifecycle"))

    routes: dict[str, str] = field(default_factory=dict)  # topic -> stage name
    # stages a crash restarts; the others get the batch again on the same instance
    restartable: frozenset[str] = frozenset()

    async def start(self) -> None:
        for name, factory in self.factories.items():
            stage = factory()
            for topics in lane_inputs(stage.input_topics).values():
                for topic in topics:
                    self.routes[topic] = name
            await stage.start()
            self.stages[name] = stage

    async def stop(self) -> None:
        for stage in self.stages.values():
            await stage.stop()
        self.stages.clear()

    async def restart(self, name: str) -> None:
        """A fresh instance of stage ``name`` (its in-memory state is gone)."""
        await self.stages[name].stop()
        stage = self.factories[name]()
        await stage.start()
        self.stages[name] = stage
        self.restarts += 1

    # ------------------------------------------------------------------ the "broker"
    def publish(self, topic: str, event: EventBase) -> None:
        body = event.model_dump_json().encode()
        # as EventPublisher routes it; the history is per topic, both lanes
        self.queues.setdefault(lane_topic(topic, event.priority), deque()).append(body)
        self.history.setdefault(topic, []).append(body)

    def publish_raw(self, topic: str, body: bytes) -> None:
        self.queues.setdefault(topic, deque()).append(body)

    def pending(self) -> list[str]:
        """Topics with records waiting for a consumer, in a stable order."""
        return sorted(t for t, q in self.queues.items() if q and t in self.routes)

    def idle(self) -> bool:
        return not self.pending()

    # ------------------------------------------------------------------ consuming
    async def deliver(self, topic: str, n: int, *, crash: bool = False) -> None:
        """Hand the next ``n`` records of ``topic`` to its stage as one batch. With
        ``crash``: the stage does its work, dies before the offset commit (outputs lost),
        and a restarted instance gets the same batch again."""
        queue = self.queues[topic]
        bodies = [queue.popleft() for _ in range(min(n, len(queue)))]
        name = self.routes[topic]
        if crash:
            self.crashes += 1
            await self._process(name, topic, bodies, emit=False)
            if name in self.restartable:
                await self.restart(name)
        await self._process(name, topic, bodies, emit=True)

    async def _process(self, name: str, topic: str, bodies: Sequence[bytes], *, emit: bool) -> None:
        valid: list[Any] = []
        lane = lane_of_topic(topic)[1]
        for body in bodies:
            try:
                event = input_adapter(topic).validate_json(body)
                valid.append(with_lane(event, BULK) if lane == BULK else event)
            except (ValidationError, ValueError) as exc:
                if emit:
                    self.dead.append(DeadLetter(name, topic, None, type(exc).__name__))
        pending = list(range(len(valid)))
        results: dict[int, Sequence[Output] | BaseException] = {}
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            if not pending:
                break
            ctx = StageContext(settings=self.settings, logger=self.log, attempt=attempt)
            outs = await self.stages[name].handle_batch([valid[i] for i in pending], ctx)
            retry = []
            for i, out in zip(pending, outs, strict=True):
                results[i] = out
                if isinstance(out, BaseException) and _retriable(out):
                    retry.append(i)
            pending = retry
        self.delivered += len(bodies)
        if not emit:
            return
        for i, event in enumerate(valid):
            out = results[i]
            if isinstance(out, BaseException):
                self._fail(name, topic, event, out)
                continue
            for o in out:
                self.publish(o.topic, demote(o.event, event.priority, o.topic))

    def _fail(self, name: str, topic: str, event: Any, exc: BaseException) -> None:
        if isinstance(exc, QuarantineError):  # as runtime.consumer publishes it
            self.publish(Topics.DOC_QUARANTINED.value, quarantined_event(event, exc, stage=name))
        self.dead.append(
            DeadLetter(name, topic, getattr(event, "document_id", None), f"{type(exc).__name__}")
        )

    async def drain(self, choose: Callable[[list[str]], tuple[str, int, bool]]) -> None:
        """Deliver until every queue is empty; ``choose(pending topics)`` picks the next
        (topic, batch size, crash) (a test's random choice, or FIFO)."""
        guard = 0
        while pending := self.pending():
            topic, n, crash = choose(pending)
            await self.deliver(topic, max(1, n), crash=crash)
            guard += 1
            if guard > 10_000:
                raise AssertionError(f"pipeline does not settle: {self.pending()}")
