"""Events the runtime's integration tests publish and read (one builder, one reader, not
a copy per test)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from aiokafka import AIOKafkaConsumer

from ragline.config import Settings
from ragline.events import INTERACTIVE, DocFetched, DocumentMeta, Lane
from ragline.hashing import content_hash
from ragline.runtime.topology import physical_topic


def markdown_fetched(
    tenant: str, doc: str, text: str | None = None, *, seq: int = 1, lane: Lane = INTERACTIVE
) -> DocFetched:
    """A fetched markdown document readable by group ``eng`` (``# <doc>`` + body by default)."""
    raw = (f"# {doc}\n\nbody" if text is None else text).encode()
    return DocFetched(
        tenant_id=tenant,
        document_id=doc,
        source_seq=seq,
        content_hash=content_hash(raw),
        meta=DocumentMeta(title=doc, mime_type="text/markdown", acl_groups=("eng",)),
        content_b64=base64.b64encode(raw).decode(),
        size_bytes=len(raw),
        priority=lane,
    )


async def read_events(settings: Settings, logical: str, n: int) -> list[dict[str, Any]]:
    """The first ``n`` records of ``logical`` (JSON), from the beginning (60 s at most)."""
    consumer = AIOKafkaConsumer(
        physical_topic(logical, settings.kafka_topic_prefix),
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=None,  # no group: every partition at once, no join wait (~5 s)
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    out: list[dict[str, Any]] = []
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while len(out) < n and asyncio.get_running_loop().time() < deadline:
            for msgs in (await consumer.getmany(timeout_ms=500)).values():
                out += [json.loads(m.value) for m in msgs]
    finally:
        await consumer.stop()
    return out
