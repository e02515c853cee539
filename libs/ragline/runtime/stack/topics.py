"""Create the pipeline's topics (idempotent) and read back their partition counts, over
the plain Kafka admin protocol (aiokafka), so it works on any Kafka-compatible cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, for_code

from ragline.runtime.stack.errors import StackError

__all__ = ["TopicReport", "ensure_topics", "topic_partitions"]

_TOPIC_ALREADY_EXISTS = 36


@dataclass(frozen=True, kw_only=True)
class TopicReport:
    created: tuple[str, ...]
    existing: tuple[str, ...]
    partitions: Mapping[str, int] = field(default_factory=dict)

    def mismatched(self, wanted: int) -> dict[str, int]:
        """Existing topics whose partition count differs from ``wanted`` (never altered)."""
        return {t: n for t, n in self.partitions.items() if n != wanted}


def _client(
    bootstrap: str, timeout_s: float, options: Mapping[str, Any] | None = None
) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(
        bootstrap_servers=bootstrap,
        request_timeout_ms=int(timeout_s * 1000),
        client_id="ragline-stack",
        **(options or {}),
    )


async def _describe(client: AIOKafkaAdminClient, topics: list[str]) -> dict[str, int]:
    described: list[dict[str, Any]] = await client.describe_topics(topics)
    out: dict[str, int] = {}
    for t in described:
        if t.get("error_code", 0) == 0:
            out[str(t["topic"])] = len(t.get("partitions", []))
    return out


async def topic_partitions(
    bootstrap: str,
    topics: Iterable[str],
    *,
    timeout_s: float = 10.0,
    options: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """Partition count of each of ``topics`` that exists (``options``: aiokafka security)."""
    client = _client(bootstrap, timeout_s, options)
    try:
        await client.start()
        return await _describe(client, list(topics))
    except KafkaError as exc:
        raise StackError("kafka", f"cannot describe topics: {type(exc).__name__}") from exc
    finally:
        await client.close()


async def ensure_topics(
    bootstrap: str,
    topics: Iterable[str],
    *,
    partitions: int,
    replication_factor: int = 1,
    timeout_s: float = 10.0,
    options: Mapping[str, Any] | None = None,
) -> TopicReport:
    """Create each missing topic with ``partitions`` partitions; existing ones are fine."""
    wanted = list(dict.fromkeys(topics))
    client = _client(bootstrap, timeout_s, options)
    try:
        await client.start()
        present = set(await client.list_topics())
        missing = [t for t in wanted if t not in present]
        created: list[str] = []
        if missing:
            resp = await client.create_topics(
                [NewTopic(t, partitions, replication_factor) for t in missing]
            )
            for topic, code, *_ in resp.topic_errors:
                if code == 0:
                    created.append(topic)
                elif code != _TOPIC_ALREADY_EXISTS:  # lost a race with another `up`: fine
                    raise StackError("kafka", f"cannot create {topic}: {for_code(code).__name__}")
        counts = await _describe(client, wanted)
    except KafkaError as exc:
        raise StackError("kafka", f"topic set-up failed: {type(exc).__name__}") from exc
    finally:
        await client.close()
    return TopicReport(
        created=tuple(created),
        existing=tuple(t for t in wanted if t not in created),
        partitions=counts,
    )
