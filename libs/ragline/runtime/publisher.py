"""Publishing events to Kafka: keyed by document_id, trace context in headers, claim
check for bodies over the broker's limit. Used by stages (through the runtime) and by
producers outside a stage (webhook, filesystem watcher, sync, evaluation).
"""

from __future__ import annotations

import logging
from datetime import datetime
from types import TracebackType
from typing import Self

from faststream.kafka import KafkaBroker

from ragline.config import Settings
from ragline.errors import ContractError, PermanentError
from ragline.events import EventBase, lane_topic, seal_problem
from ragline.runtime.kafka_errors import kafka_errors
from ragline.runtime.kafka_security import faststream_security
from ragline.runtime.metrics import PRODUCED
from ragline.runtime.topology import physical_topic
from ragline.store.claimcheck import CLAIM_HEADER, ClaimCheckStore
from ragline.tracing import TRACE_HEADER, current_traceparent, span

__all__ = ["SOURCE_AT_HEADER", "EventPublisher", "make_broker"]

# when the source change entered the platform: carried stage to stage for freshness
SOURCE_AT_HEADER = "ragline-source-at"


def make_broker(settings: Settings, client_id: str, **kwargs: object) -> KafkaBroker:
    """The FastStream broker of a service. Its producer waits for every in-sync replica
    (``acks=all``; with ``min.insync.replicas`` 2 on three brokers a write survives the
    loss of one) and is idempotent: a retry after a lost acknowledgement (a leader
    change, a broker restart) never writes a record twice (docs/adr/0014)."""
    # a list: FastStream hands a string to aiokafka as ONE address, so a comma-separated
    # bootstrap ("b-1:9092,b-2:9092") would name a host "b-1:9092,b-2"
    bootstrap = [a.strip() for a in settings.kafka_bootstrap.split(",") if a.strip()]
    return KafkaBroker(
        bootstrap,
        client_id=client_id,
        logger=logging.getLogger("ragline.faststream"),
        security=faststream_security(settings),
        acks="all",
        enable_idempotence=True,
        compression_type=None
        if settings.kafka_compression == "none"
        else settings.kafka_compression,
        max_request_size=max(settings.kafka_max_message_bytes * 2, 1_048_576),
        **kwargs,  # type: ignore[arg-type]
    )


class EventPublisher:
    """``async with EventPublisher(settings) as pub: await pub.publish(topic, event)``.

    With ``broker=`` it publishes through an already running broker (the stage runtime);
    otherwise it opens its own producer connection.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        service: str = "cli",
        broker: KafkaBroker | None = None,
    ) -> None:
        self.settings = settings
        self.service = service
        self._own = broker is None
        self._broker = broker or make_broker(settings, f"ragline-{service}-producer")
        self._claims = ClaimCheckStore(settings.admin_dsn())

    async def __aenter__(self) -> Self:
        if self._own:
            with kafka_errors(f"connect to {self.settings.kafka_bootstrap}"):
                await self._broker.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own:
            await self._broker.stop()
        await self._claims.close()

    async def publish(
        self,
        topic: str,
        event: EventBase,
        *,
        source_at: datetime | None = None,
    ) -> None:
        if (why := seal_problem(event)) is not None:  # text around the scanner (issue 31)
            raise ContractError(why)
        if event.traceparent is not None:  # a stage's output: its publish span is current
            await self._publish(topic, event, event.traceparent, source_at)
            return
        # a new trace starts here (webhook, sync, watcher): its root is this publish span
        with span(
            f"{topic} publish",
            kind="producer",
            attributes={"messaging.system": "kafka", "messaging.destination.name": topic},
        ):
            await self._publish(topic, event, current_traceparent(None), source_at)

    async def _publish(
        self, topic: str, event: EventBase, traceparent: str, source_at: datetime | None
    ) -> None:
        headers = {
            TRACE_HEADER: traceparent,
            "event-type": event.event_type,
            SOURCE_AT_HEADER: (source_at or event.occurred_at).isoformat(),
        }
        body = event.model_dump_json().encode()
        # the event's lane picks the topic: `<topic>.bulk` for bulk work (docs/adr/0012)
        await self.publish_raw(
            lane_topic(topic, event.priority), body, key=event.document_id, headers=headers
        )

    async def publish_raw(
        self, topic: str, body: bytes, *, key: str | None, headers: dict[str, str]
    ) -> None:
        """Publish bytes as they are (claim-checked when too big); DLQ and replay use this.
        ``topic`` is a logical name: the install's topic prefix is added here."""
        headers = dict(headers)
        if CLAIM_HEADER in headers:
            # a stub published again (replay, requeue) is a new reference to its body
            if not await self._claims.touch(headers[CLAIM_HEADER]):
                raise PermanentError(
                    f"claim check {headers[CLAIM_HEADER][:12]}… is gone (older than "
                    "RAGLINE_RETENTION_CLAIM_CHECK_DAYS); the message cannot be republished"
                )
        elif len(body) > self.settings.kafka_max_message_bytes:
            claim = await self._claims.put(body)
            headers[CLAIM_HEADER] = claim
            body = ClaimCheckStore.stub(claim)
        with kafka_errors(f"publish to {topic}"):
            await self._broker.publish(
                body,
                physical_topic(topic, self.settings.kafka_topic_prefix),
                key=key.encode() if key is not None else None,
                headers=headers,
            )
        PRODUCED.labels(self.service, topic).inc()

    async def claim(self, body: bytes) -> str:
        """Store ``body`` in the claim-check store; returns its key."""
        return await self._claims.put(body)

    async def resolve(self, body: bytes, headers: dict[str, str]) -> bytes:
        """The real body of a consumed message (fetches claim-checked bodies)."""
        claim = headers.get(CLAIM_HEADER)
        if claim is None:
            return body
        return await self._claims.get(claim)
