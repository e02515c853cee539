"""Reading ``.dlq`` topics with the dlq tool's own consumer group.

The partitions are assigned by hand (no group membership, so no rebalance wait) and the
group is used only to store offsets: what lies before its committed offset was replayed
or purged; what lies after is pending. A run reads up to the high watermarks taken at
its start, so records dead-lettered meanwhile (or requeued by the run) wait for the next.
Topic names are logical (``doc.parsed.dlq``); the install's prefix
(``RAGLINE_KAFKA_TOPIC_PREFIX``) is added to topics and the group at the broker only.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError

from ragline.config import Settings
from ragline.errors import BackendUnavailable, PermanentError
from ragline.events import ALL_TOPICS, DeadLetter
from ragline.hashing import keyed_digest
from ragline.ops.dlq_select import UNREADABLE
from ragline.runtime.deadletter import WITHHELD_HEADER
from ragline.runtime.kafka_errors import kafka_errors
from ragline.runtime.kafka_security import aiokafka_options
from ragline.runtime.lag import partitions_of
from ragline.runtime.topology import logical_topic, physical_group, physical_topic
from ragline.store.claimcheck import CLAIM_HEADER, ClaimCheckStore

__all__ = ["DLQ_TOPICS", "DlqEntry", "DlqReader", "PartitionRange", "normalize_topic"]

DLQ_TOPICS: tuple[str, ...] = tuple(t for t in ALL_TOPICS if t.endswith(".dlq"))


def normalize_topic(name: str) -> str:
    """``doc.parsed`` or ``doc.parsed.dlq`` -> ``doc.parsed.dlq``."""
    return name if name.endswith(".dlq") else f"{name}.dlq"


_SECRET_IN_IDENTITY = "secret_in_identity"  # noqa: S105 (a reason code: scanning/scanner.py)


@dataclass(frozen=True, kw_only=True)
class PartitionRange:
    topic: str
    partition: int
    start: int  # the group's committed offset (or the log start)
    end: int  # high watermark when the run began

    @property
    def pending(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True, kw_only=True)
class DlqEntry:
    """One record of a .dlq topic. ``value``/``headers`` are the record as stored (a
    claim-check stub stays a stub); ``letter`` is None when it is not a DeadLetter."""

    topic: str
    partition: int
    offset: int
    key: str | None
    timestamp: datetime
    value: bytes
    headers: dict[str, str]
    letter: DeadLetter | None

    @property
    def error_class(self) -> str:
        return self.letter.error_class if self.letter else UNREADABLE

    @property
    def stage(self) -> str:
        return self.letter.stage if self.letter else UNREADABLE

    @property
    def tenant_id(self) -> str | None:
        return self.letter.tenant_id if self.letter else None

    @property
    def document_id(self) -> str | None:
        return self.letter.document_id if self.letter else None

    @property
    def failed_at(self) -> datetime:
        return self.letter.failed_at if self.letter else self.timestamp

    @property
    def secret_in_id(self) -> bool:
        """The scanner blocked the document for a secret in an identity field (its id,
        uri, ACL groups...): the id itself may be the secret."""
        dl = self.letter
        return dl is not None and (
            dl.original_headers.get(WITHHELD_HEADER) == _SECRET_IN_IDENTITY
            or dl.error_message.startswith(_SECRET_IN_IDENTITY)
        )

    def summary(self, *, id_key: bytes) -> dict[str, Any]:
        """Safe to print: never the original payload (``original_b64``) or its headers,
        and a keyed digest (``id_key``) instead of a document id that may be a secret."""
        dl = self.letter
        doc_id = dl.document_id if dl else None
        if doc_id is not None and self.secret_in_id:
            doc_id = keyed_digest(doc_id, id_key)
        return {
            "dlq_topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "failed_at": self.failed_at.isoformat(),
            "stage": self.stage,
            "source_topic": dl.topic if dl else None,
            "error_class": self.error_class,
            "error_message": dl.error_message if dl else "record is not a DeadLetter",
            "attempts": dl.attempts if dl else None,
            "tenant_id": self.tenant_id,
            "document_id": doc_id,
            "dead_letter_id": dl.dead_letter_id if dl else None,
        }


def _headers(raw: Any) -> dict[str, str]:
    return {
        k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
        for k, v in (raw or ())
    }


class DlqReader:
    """``async with DlqReader(settings, group=...) as r``: ranges, entries, commits."""

    def __init__(self, settings: Settings, *, group: str, read_timeout_s: float = 30.0) -> None:
        self._settings = settings
        self._prefix = prefix = settings.kafka_topic_prefix
        self._group = group = physical_group(group, prefix)
        self._timeout = read_timeout_s
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap,
            group_id=group,
            client_id="ragline-dlq-tool",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=max(1_048_576, 2 * settings.kafka_max_message_bytes),
            **aiokafka_options(settings),
        )
        self._claims = ClaimCheckStore(settings.admin_dsn())

    async def __aenter__(self) -> Self:
        with kafka_errors(f"connect to {self._settings.kafka_bootstrap}"):
            await self._consumer.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._consumer.stop()
        await self._claims.close()

    async def existing(self, wanted: Iterable[str]) -> list[str]:
        """The requested .dlq topics that exist (all known ones when none is requested)."""
        names = [normalize_topic(t) for t in wanted] or list(DLQ_TOPICS)
        present = set(await self._consumer.topics())
        return [t for t in dict.fromkeys(names) if self._physical(t) in present]

    def _physical(self, topic: str) -> str:
        return physical_topic(topic, self._prefix)

    async def ranges(self, topics: Iterable[str]) -> list[PartitionRange]:
        tps = await partitions_of(self._consumer, [self._physical(t) for t in topics])
        if not tps:
            return []
        self._consumer.assign(tps)
        with kafka_errors("read the dlq offsets"):
            first = await self._consumer.beginning_offsets(tps)
            last = await self._consumer.end_offsets(tps)
            out = []
            for tp in tps:
                committed = await self._consumer.committed(tp)
                start = max(committed if committed is not None else 0, first[tp])
                out.append(
                    PartitionRange(
                        topic=logical_topic(tp.topic, self._prefix),
                        partition=tp.partition,
                        start=start,
                        end=last[tp],
                    )
                )
        return out

    async def entries(
        self, rng: PartitionRange, *, stop: int | None = None
    ) -> AsyncIterator[DlqEntry]:
        """Records of ``rng`` in offset order, up to ``stop`` (exclusive; default: end)."""
        end = rng.end if stop is None else min(stop, rng.end)
        if rng.start >= end:
            return
        tp = TopicPartition(self._physical(rng.topic), rng.partition)
        self._consumer.assign([tp])
        self._consumer.seek(tp, rng.start)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        while True:
            with kafka_errors(f"read {rng.topic}"):
                batch = await self._consumer.getmany(tp, timeout_ms=500, max_records=200)
                position = await self._consumer.position(tp)
            msgs = batch.get(tp, [])
            if msgs:
                deadline = loop.time() + self._timeout
            for msg in msgs:
                if msg.offset >= end:
                    return
                yield await self._entry(msg)
            if position >= end:
                return
            if loop.time() > deadline:
                raise BackendUnavailable(
                    f"{rng.topic}[{rng.partition}] yielded nothing for {self._timeout:.0f} s"
                    f" at offset {position} (end {end})"
                )

    async def _entry(self, msg: Any) -> DlqEntry:
        headers = _headers(msg.headers)
        value: bytes = msg.value or b""
        letter: DeadLetter | None
        try:
            body = value
            if CLAIM_HEADER in headers:
                body = await self._claims.get(headers[CLAIM_HEADER])
            letter = DeadLetter.model_validate_json(body)
        except (ValidationError, ValueError, PermanentError):
            letter = None
        return DlqEntry(
            topic=logical_topic(msg.topic, self._prefix),
            partition=msg.partition,
            offset=msg.offset,
            key=msg.key.decode("utf-8", "replace") if msg.key else None,
            timestamp=datetime.fromtimestamp(msg.timestamp / 1000, tz=UTC),
            value=value,
            headers=headers,
            letter=letter,
        )

    async def commit(self, rng: PartitionRange, offset: int) -> None:
        """Mark everything before ``offset`` of this partition as done for the group."""
        tp = TopicPartition(self._physical(rng.topic), rng.partition)
        if tp not in self._consumer.assignment():
            self._consumer.assign([tp])
        with kafka_errors(f"commit on {rng.topic}"):
            await self._consumer.commit({tp: offset})
