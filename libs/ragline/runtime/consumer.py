"""Drives a ``Stage``: consume, validate, handle with retries, publish, then commit.

Guarantees (at-least-once in, exactly-once effect downstream by idempotent writers):
- the offset is committed only after every output of the message (or its dead letter)
  has been published; the consumer is sequential per subscriber, so a commit never
  covers an unprocessed message;
- a message that does not match its topic's contract goes to ``<topic>.dlq`` at once;
- ``TransientError`` and unexpected exceptions are retried with exponential backoff up
  to ``max_attempts``, then dead-lettered; ``PermanentError`` is dead-lettered at once;
  ``QuarantineError`` also publishes ``doc.quarantined`` with the reason code;
- if Kafka itself refuses our outputs, the runner stops WITHOUT committing (fail-stop):
  the orchestrator restarts it and it resumes from the last committed offset.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any

from faststream import AckPolicy
from faststream.kafka.annotations import KafkaMessage
from pydantic import ValidationError

from ragline.config import Settings
from ragline.errors import PermanentError, QuarantineError, RaglineError, TransientError
from ragline.events import (
    BULK,
    CONTENT_TOPICS,
    INTERACTIVE,
    EventBase,
    Lane,
    Topics,
    dlq_topic,
    lane_of_topic,
    lane_topic,
    read_event,
)
from ragline.runtime.deadletter import dead_letter, withheld_body
from ragline.runtime.health import ConsumerHealth
from ragline.runtime.lag import LagRevokeListener, PartitionLagGauge
from ragline.runtime.lanes import LaneGate, LaneSettings, demote, lane_inputs, with_lane
from ragline.runtime.metrics import (
    CONSUMED,
    DLQ,
    FAILED,
    FRESHNESS,
    HANDLER_SECONDS,
    INFLIGHT,
    LANE_BATCHES,
    LANE_MESSAGES,
    QUARANTINED,
    RETRIES,
    STAGE_SECONDS,
)
from ragline.runtime.oneshot import release_memory
from ragline.runtime.priority import current_lane, lane_context
from ragline.runtime.publisher import SOURCE_AT_HEADER, EventPublisher, make_broker
from ragline.runtime.stage import Output, Stage, StageContext, quarantined_event
from ragline.runtime.topology import consumer_group, logical_topic, physical_topic
from ragline.store.claimcheck import CLAIM_HEADER, ClaimCheckStore
from ragline.tracing import (
    TRACE_HEADER,
    context_of,
    current_traceparent,
    end_span,
    remote_context,
    span,
    start_span,
    use_span,
)

__all__ = ["IDLE_WAIT_MS", "FatalError", "Record", "StageRunner", "undecoded", "wait_idle"]

_MAX_BACKOFF_S = 30.0


class FatalError(RaglineError):
    """The runner cannot make progress safely (Kafka refuses our outputs): stop, no commit."""


@dataclass(frozen=True, kw_only=True)
class Record:
    topic: str  # logical, without the lane: `doc.parsed` for `doc.parsed.bulk` too
    partition: int | None
    offset: int | None
    key: bytes | None
    value: bytes
    headers: dict[str, str]
    lane: Lane = INTERACTIVE


@dataclass(frozen=True, kw_only=True)
class _Failure:
    """A message that exhausted its attempts (distinct from an empty tuple of outputs)."""

    error: BaseException
    attempts: int


def _record(raw: Any, prefix: str = "") -> Record:
    headers = {
        k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
        for k, v in (raw.headers or ())
    }
    topic, lane = lane_of_topic(logical_topic(raw.topic, prefix))
    return Record(
        topic=topic,
        lane=lane,
        partition=raw.partition,
        offset=raw.offset,
        key=raw.key,
        value=raw.value or b"",
        headers=headers,
    )


# topics carrying a version of a document between the connector and the indexer
_CONTENT_TOPICS = frozenset(t.value for t in CONTENT_TOPICS)


class _DeadLettered(QuarantineError):
    """A version dead-lettered for a reason that is not the document's fault."""


def _dead_lettered(exc: BaseException, stage: str, attempts: int) -> _DeadLettered:
    q = _DeadLettered(
        "dead_lettered",
        f"{stage} could not process this version ({type(exc).__name__} after {attempts} "
        "attempt(s)); it is in the dead-letter topic (ragline dlq replay)",
    )
    q.__cause__ = exc
    return q


def _retriable(exc: BaseException) -> bool:
    if isinstance(exc, TransientError):
        return True
    return not isinstance(exc, PermanentError | ValidationError | ValueError | TypeError)


async def undecoded(msg: Any) -> Any:
    """The subscribers' decoder: the message itself, for the handler to read.

    FastStream's default decoder parsed every body as JSON (thrown away: ``read_event``
    validates the bytes), and its dependency injection resolved the handler's message
    argument in a worker thread of its own for every message (``fast_depends``: a sync
    context field goes through ``anyio.to_thread``). With ``apply_types=False`` on the
    broker and this decoder, the handler gets the ``KafkaMessage`` directly: the same
    message, without a JSON parse and a thread round trip per poll (issue 35)."""
    return msg


# how long an idle batch consumer waits for a record in one call (records wake it at once)
IDLE_WAIT_MS = 1000


def wait_idle(subscriber: Any, idle_wait_ms: int = IDLE_WAIT_MS) -> None:
    """An idle batch subscriber waits for records instead of polling every linger.

    FastStream's batch loop calls ``getmany(timeout_ms=linger)`` and, when that comes
    back empty, sleeps another linger before the next call: an idle stage with a 20 ms
    linger woke ~25 times a second per lane consumer, which cost each idle service about
    as much CPU as a busy chunker (docs/benchmarks.md, issue 35). ``getmany`` returns as
    soon as any record is fetched, so after an empty linger this waits up to
    ``idle_wait_ms`` in one call, without the sleep: a record arriving then is handed
    over at once (no added latency), and a busy stage polls exactly as before.
    """
    linger, most = subscriber.batch_timeout_ms, subscriber.max_records

    async def get_msg(consumer: Any) -> tuple[Any, ...]:
        records = await consumer.getmany(timeout_ms=linger, max_records=most)
        if not records:
            records = await consumer.getmany(timeout_ms=idle_wait_ms, max_records=most)
        return tuple(chain.from_iterable(records.values()))

    subscriber.get_msg = get_msg


class StageRunner:
    def __init__(
        self,
        stage: Stage[Any, Any],
        settings: Settings,
        logger: logging.Logger,
        *,
        lanes: LaneSettings | None = None,
    ) -> None:
        self.stage = stage
        self.settings = settings
        self.log = logger
        self.prefix = settings.kafka_topic_prefix
        self.lags = {
            lane: PartitionLagGauge(stage.name, self.prefix) for lane in (INTERACTIVE, BULK)
        }
        self.gate = LaneGate(lanes)
        # no dependency injection: the handler takes the message as it is (``_undecoded``)
        self.broker = make_broker(
            settings, f"ragline-{stage.name}", graceful_timeout=60.0, apply_types=False
        )
        self.publisher = EventPublisher(settings, service=stage.name, broker=self.broker)
        self.fatal: BaseException | None = None
        self.health = ConsumerHealth(
            loop_stall_s=settings.health_loop_stall_s,
            handler_timeout_s=settings.health_handler_timeout_s,
        )
        self.stopping = asyncio.Event()
        # per lane: when its consumer last finished a poll (the ``idle`` phase runs from
        # there to the next poll's arrival)
        self._last_end: dict[Lane, float] = {}
        self._subscribe()

    # ------------------------------------------------------------------ wiring
    def _subscribe(self) -> None:
        """One consumer per lane (runtime/lanes.py): each sequential, its own group."""
        self._subscribers: dict[Lane, Any] = {}
        for lane, logical in lane_inputs(self.stage.input_topics).items():
            self._subscribers[lane] = self._lane_subscriber(lane, logical)
        self._subscriber = self._subscribers[INTERACTIVE]

    def _lane_subscriber(self, lane: Lane, logical: tuple[str, ...]) -> Any:
        batch = self.stage.batch
        kwargs: dict[str, Any] = {
            "group_id": consumer_group(self.stage.name, self.prefix, lane),
            "auto_offset_reset": "earliest",
            "ack_policy": AckPolicy.MANUAL,
            "max_poll_interval_ms": 600_000,
            "listener": LagRevokeListener(self.lags[lane]),
        }
        if batch is not None:
            kwargs.update(
                batch=True, max_records=batch.max_records, batch_timeout_ms=batch.linger_ms
            )
        topics = (physical_topic(t, self.prefix) for t in logical)
        subscriber = self.broker.subscriber(*topics, decoder=undecoded, **kwargs)
        if batch is not None:
            wait_idle(subscriber)

        async def on_message(msg: KafkaMessage) -> None:  # the message itself: ``undecoded``
            await self.on_message(msg, lane)

        subscriber(on_message)
        return subscriber

    async def report_lag(self, interval_s: float = 10.0) -> None:
        """Publish consumer lag per owned partition until cancelled (dashboards/alerts).

        Lag is the high watermark minus the group's committed offset, the same number
        ``ragline lag`` reads from the broker: the fetch position runs ahead of what was
        handled (prefetched batches), so it under-reports a stuck stage. Partitions this
        replica no longer owns stop being exported (``PartitionLagGauge``)."""
        try:
            while True:
                for lane, sub in self._subscribers.items():
                    consumer = getattr(sub, "consumer", None)
                    if consumer is not None:
                        await self._probe_lag(consumer, self.lags[lane])
                await asyncio.sleep(interval_s)
        finally:
            for gauge in self.lags.values():
                gauge.clear()

    async def _probe_lag(self, consumer: Any, lag: PartitionLagGauge) -> None:
        assigned = set(consumer.assignment())
        lag.retain(assigned)
        for tp in assigned:
            highwater = consumer.highwater(tp)
            if highwater is None:
                continue
            try:
                done = await consumer.committed(tp)
                if done is None:  # the group never committed here: from the log start
                    done = (await consumer.beginning_offsets([tp]))[tp]
            except Exception as exc:  # rebalancing: try again next round
                self.log.debug("lag probe skipped: %s", type(exc).__name__)
                continue
            if tp in consumer.assignment():  # not revoked while we awaited
                lag.set(tp, highwater - done)

    def _phase(self, lane: Lane, phase: str, seconds: float) -> None:
        STAGE_SECONDS.labels(self.stage.name, lane, phase).inc(max(0.0, seconds))

    async def on_message(self, msg: Any, lane: Lane = INTERACTIVE) -> None:
        arrived = time.perf_counter()
        if (last := self._last_end.get(lane)) is not None:
            self._phase(lane, "idle", arrived - last)
        self.gate.consumer = getattr(self._subscriber, "consumer", None)
        if lane == BULK:
            self._phase(lane, "gate", await self.gate.wait_turn())  # interactive first
        try:
            # the lane also decides the CPU priority of the blocking work (runtime/priority.py)
            with (
                self.gate.interactive() if lane == INTERACTIVE else nullcontext(),
                lane_context(lane),
            ):
                await self._on_message(msg, lane)
        finally:
            self._last_end[lane] = time.perf_counter()

    async def _on_message(self, msg: Any, lane: Lane = INTERACTIVE) -> None:
        if self.fatal is not None:
            return  # stopping after a fatal error: never commit past the failed message
        raw = msg.raw_message
        records = [_record(r, self.prefix) for r in (raw if isinstance(raw, tuple) else (raw,))]
        t0 = time.perf_counter()
        INFLIGHT.labels(self.stage.name).inc(len(records))
        token = self.health.handling()
        try:
            size = await self.process(records)
        except FatalError as exc:
            self.fatal = exc
            self.log.error(
                "fatal: stopping without commit",
                extra={"fields": {"error_class": type(exc.__cause__ or exc).__name__}},
            )
            self.stopping.set()
            return
        finally:
            self.health.handled(token)
            INFLIGHT.labels(self.stage.name).dec(len(records))
        t_ack = time.perf_counter()
        await msg.ack()
        self._phase(lane, "commit", time.perf_counter() - t_ack)
        LANE_MESSAGES.labels(self.stage.name, lane).inc(len(records))
        LANE_BATCHES.labels(self.stage.name, lane).inc()
        HANDLER_SECONDS.labels(self.stage.name, records[0].topic).observe(time.perf_counter() - t0)
        if 0 < self.settings.release_memory_bytes <= size:
            # a large message is gone: hand its memory back (the RSS stays at the peak
            # otherwise; runtime/oneshot.py)
            await asyncio.to_thread(release_memory)

    # ------------------------------------------------------------------ processing
    def _consume_span(self, rec: Record) -> Any:
        """The consumer span of one record (None with tracing off): a child of the span
        that published it (its ``traceparent``), and linked to it, so one document's
        spans form one trace from ``source.changes`` to ``doc.indexed``."""
        producer = remote_context(rec.headers.get(TRACE_HEADER))
        return start_span(
            f"{rec.topic} process",
            kind="consumer",
            parent=producer,
            links=(producer,),
            attributes={
                "messaging.system": "kafka",
                "messaging.operation.type": "process",
                "messaging.destination.name": rec.topic,
                "messaging.destination.partition.id": str(rec.partition),
                "messaging.kafka.offset": rec.offset if rec.offset is not None else -1,
                "messaging.consumer.group.name": consumer_group(self.stage.name, self.prefix),
                "ragline.stage": self.stage.name,
            },
        )

    async def process(self, records: Sequence[Record]) -> int:
        """Handles the records; returns the bytes of their bodies."""
        spans = {id(rec): self._consume_span(rec) for rec in records}
        try:
            return await self._process(records, spans)
        finally:
            for s in spans.values():
                end_span(s)

    async def _process(self, records: Sequence[Record], spans: dict[int, Any]) -> int:
        valid: list[tuple[Record, Any]] = []
        size = 0
        for rec in records:
            CONSUMED.labels(self.stage.name, rec.topic).inc()
            try:
                body = await self._with_retries(
                    lambda rec=rec: self.publisher.resolve(rec.value, rec.headers)
                )
                size += len(body)
                # the lane is the record's topic's, or lower (an event that says bulk)
                event = (
                    with_lane(read_event(rec.topic, body), BULK)
                    if rec.lane == BULK
                    else (read_event(rec.topic, body))
                )
            except (ValidationError, ValueError, PermanentError) as exc:
                FAILED.labels(self.stage.name, rec.topic, type(exc).__name__).inc()
                with use_span(spans[id(rec)]):
                    await self._dead_letter(rec, exc, attempts=1, event=None)
                continue
            if (s := spans[id(rec)]) is not None:
                s.set_attribute("ragline.document_id", event.document_id)
            valid.append((rec, event))
        if not valid:
            return size
        lane = current_lane()  # the consumer's (on_message sets it)
        t0 = time.perf_counter()
        results = await self._handle(valid, [spans[id(rec)] for rec, _ in valid])
        t1 = time.perf_counter()
        self._phase(lane, "handle", t1 - t0)
        # publish concurrently across documents, in order within one document (its key)
        by_key: dict[bytes | None, list[tuple[Record, Any, Any]]] = {}
        for (rec, event), result in zip(valid, results, strict=True):
            by_key.setdefault(rec.key, []).append((rec, event, result))
        await asyncio.gather(*(self._emit(items, spans) for items in by_key.values()))
        self._phase(lane, "produce", time.perf_counter() - t1)
        return size

    async def _emit(self, items: Sequence[tuple[Record, Any, Any]], spans: dict[int, Any]) -> None:
        for rec, event, result in items:
            with use_span(spans[id(rec)]):
                if isinstance(result, _Failure):
                    await self._fail(rec, event, result.error, result.attempts)
                else:
                    for out in result:
                        await self._publish_output(rec, event, out)

    async def _handle(
        self, valid: Sequence[tuple[Record, Any]], spans: Sequence[Any] = ()
    ) -> list[Sequence[Output[EventBase]] | _Failure]:
        n = len(valid)
        attempts = [0] * n
        results: list[Sequence[Output[EventBase]] | _Failure | None] = [None] * n
        pending = list(range(n))
        while pending:
            ctx = StageContext(
                settings=self.settings,
                logger=self.log,
                attempt=max(attempts[i] for i in pending) + 1,
                headers=valid[pending[0]][0].headers if len(pending) == 1 else {},
            )
            # one handle span per attempt: a child of the first record's consume span,
            # linked to the others of the batch
            owners = [spans[i] for i in pending if i < len(spans)]
            with span(
                f"{self.stage.name} handle",
                parent=context_of(owners[0]) if owners else None,
                links=[context_of(s) for s in owners[1:]],
                attributes={"ragline.stage": self.stage.name, "ragline.batch_size": len(pending)},
            ):
                outs = await self.stage.handle_batch([valid[i][1] for i in pending], ctx)
            retry: list[int] = []
            for i, out in zip(pending, outs, strict=True):
                attempts[i] += 1
                if isinstance(out, BaseException):
                    rec = valid[i][0]
                    FAILED.labels(self.stage.name, rec.topic, type(out).__name__).inc()
                    if _retriable(out) and attempts[i] < self.settings.max_attempts:
                        retry.append(i)
                    else:
                        results[i] = _Failure(error=out, attempts=attempts[i])
                else:
                    results[i] = out
            pending = retry
            if pending:
                RETRIES.labels(self.stage.name, valid[pending[0]][0].topic).inc(len(pending))
                await asyncio.sleep(self._backoff(max(attempts[i] for i in pending)))
        return [r for r in results if r is not None]

    def _backoff(self, attempt: int) -> float:
        return min(self.settings.retry_backoff_s * 2.0 ** (attempt - 1), _MAX_BACKOFF_S)

    async def _with_retries(self, fn: Any) -> Any:
        """Retry an I/O step on TransientError; when it keeps failing the runner is stuck."""
        for attempt in range(1, self.settings.max_attempts + 1):
            try:
                return await fn()
            except TransientError as exc:
                if attempt == self.settings.max_attempts:
                    raise FatalError("backend unavailable after retries") from exc
                await asyncio.sleep(self._backoff(attempt))
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ outputs
    def _source_at(self, rec: Record, event: EventBase) -> datetime:
        value = rec.headers.get(SOURCE_AT_HEADER)
        if value and rec.topic != Topics.SOURCE_CHANGES:
            try:
                return datetime.fromisoformat(value)
            except ValueError:
                pass
        return event.occurred_at

    async def _publish_output(self, rec: Record, event: EventBase, out: Output[EventBase]) -> None:
        parent = rec.headers.get(TRACE_HEADER) or event.traceparent
        source_at = self._source_at(rec, event)
        with span(
            f"{out.topic} publish",
            kind="producer",
            attributes={
                "messaging.system": "kafka",
                "messaging.operation.type": "send",
                "messaging.destination.name": out.topic,
            },
        ):
            # the output carries this publish span's context: its consumer's span is a
            # child of it (a fresh child id of the input's when tracing is off)
            # outputs stay in the input's lane (bulk in, bulk out; a stage may demote)
            ev = demote(out.event, event.priority, out.topic).model_copy(
                update={"traceparent": current_traceparent(parent)}
            )
            await self._with_retries(
                lambda: self.publisher.publish(out.topic, ev, source_at=source_at)
            )
        FRESHNESS.labels(self.stage.name).observe(
            max(0.0, (datetime.now(source_at.tzinfo) - source_at).total_seconds())
        )

    async def _fail(self, rec: Record, event: Any, exc: BaseException, attempts: int) -> None:
        if not isinstance(exc, QuarantineError) and rec.topic in _CONTENT_TOPICS:
            # every document that entered gets a terminal status, never 'accepted'
            # forever (issue 12): a version dead-lettered for any other reason is
            # recorded as quarantined too; `ragline dlq replay` can still index it
            exc = _dead_lettered(exc, self.stage.name, attempts)
        if isinstance(exc, QuarantineError):
            QUARANTINED.labels(self.stage.name, exc.reason_code).inc()
            q = quarantined_event(event, exc, stage=self.stage.name)
            await self._publish_output(rec, event, Output(topic=Topics.DOC_QUARANTINED, event=q))
            exc = exc.__cause__ if isinstance(exc, _DeadLettered) and exc.__cause__ else exc
        await self._dead_letter(rec, exc, attempts=attempts, event=event)

    async def _dead_letter(
        self, rec: Record, exc: BaseException, *, attempts: int, event: Any
    ) -> None:
        # the DLQ never carries a document body (it may hold the very secret that got
        # the document blocked): the body goes to the admin-only claim-check store and the
        # record keeps a reference, which `ragline dlq replay` republishes transparently
        value, headers = rec.value, dict(rec.headers)
        if (withheld := withheld_body(exc, value, headers)) is not None:
            value, headers = withheld  # a blocked document leaves no copy (issue 13)
        elif CLAIM_HEADER not in headers:
            claim = await self._with_retries(lambda: self.publisher.claim(rec.value))
            value, headers = ClaimCheckStore.stub(claim), {**headers, CLAIM_HEADER: claim}
        dl = dead_letter(
            stage=self.stage.name,
            topic=lane_topic(rec.topic, rec.lane),
            partition=rec.partition,
            offset=rec.offset,
            key=rec.key,
            value=value,
            headers=headers,
            exc=exc,
            attempts=attempts,
            event=event,
        )
        target = dlq_topic(rec.topic)
        body = dl.model_dump_json().encode()
        key = rec.key.decode("utf-8", "replace") if rec.key else None
        headers = {"event-type": "dead_letter", "error-class": dl.error_class}
        await self._with_retries(
            lambda: self.publisher.publish_raw(target, body, key=key, headers=headers)
        )
        DLQ.labels(self.stage.name, rec.topic).inc()
        self.log.warning(
            "dead-lettered",
            extra={
                "fields": {
                    "topic": rec.topic,
                    "partition": rec.partition,
                    "offset": rec.offset,
                    "document_id": dl.document_id,
                    "error_class": dl.error_class,
                    "error": dl.error_message,
                    "attempts": attempts,
                }
            },
        )
