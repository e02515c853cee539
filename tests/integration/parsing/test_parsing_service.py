"""The parser service on the real stack: a corrupt PDF is quarantined (doc.quarantined +
DLQ, reason code, no document text) while the documents after it are parsed, in the
service's own parse worker process."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from ragline.config import Settings
from ragline.events import (
    DeadLetter,
    DocFetched,
    DocParsed,
    DocQuarantined,
    DocumentMeta,
    Topics,
    dlq_topic,
)
from ragline.hashing import content_hash
from ragline.runtime.publisher import EventPublisher

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[2] / "fixtures" / "parsing"
TOPICS = (Topics.DOC_PARSED, Topics.DOC_QUARANTINED, dlq_topic(Topics.DOC_FETCHED))


def _fetched(tenant: str, path: Path, seq: int) -> DocFetched:
    raw = path.read_bytes()
    return DocFetched(
        tenant_id=tenant,
        document_id=f"fs:{tenant}/{path.name}",
        source_seq=seq,
        content_hash=content_hash(raw),
        meta=DocumentMeta(source_type="filesystem", uri=path.as_uri(), acl_groups=("eng",)),
        content_b64=base64.b64encode(raw).decode(),
        size_bytes=len(raw),
    )


async def _collect(
    settings: Settings,
    tenant: str,
    want: int,
    timeout_s: float = 120.0,
) -> list[tuple[str, dict[str, Any]]]:
    consumer = AIOKafkaConsumer(
        *TOPICS,
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=None,  # no group: every partition at once, no join wait (~5 s)
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    seen: list[tuple[str, dict[str, Any]]] = []
    try:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while len(seen) < want and asyncio.get_running_loop().time() < deadline:
            for tp, msgs in (await consumer.getmany(timeout_ms=500)).items():
                for m in msgs:
                    body = json.loads(m.value)
                    if body.get("tenant_id") == tenant:
                        seen.append((tp.topic, body))
    finally:
        await consumer.stop()
    return seen


async def test_corrupt_pdf_is_quarantined_while_the_next_documents_flow(
    stack: Settings, service_process: Any, tenant: str
) -> None:
    parser = service_process("parser")
    await parser.wait_metrics_async(timeout_s=180)
    inputs = [
        FIXTURES / "bad" / "corrupt.pdf",
        FIXTURES / "report.pdf",
        FIXTURES / "handbook.docx",
        FIXTURES / "bad" / "zip_bomb.docx",
        FIXTURES / "guide.md",
    ]
    async with EventPublisher(stack) as pub:
        for seq, path in enumerate(inputs, 1):
            await pub.publish(Topics.DOC_FETCHED, _fetched(tenant, path, seq))

    seen = await _collect(stack, tenant, want=3 + 2 * 2)  # 3 parsed, 2x (quarantine + DLQ)
    parsed = {
        DocParsed.model_validate(b).document_id: DocParsed.model_validate(b)
        for t, b in seen
        if t == Topics.DOC_PARSED
    }
    quarantined = {
        b["document_id"]: DocQuarantined.model_validate(b)
        for t, b in seen
        if t == Topics.DOC_QUARANTINED
    }
    dead = [DeadLetter.model_validate(b) for t, b in seen if t == dlq_topic(Topics.DOC_FETCHED)]

    assert set(parsed) == {f"fs:{tenant}/{n}" for n in ("report.pdf", "handbook.docx", "guide.md")}
    assert parsed[f"fs:{tenant}/report.pdf"].document.page_count == 3
    assert parsed[f"fs:{tenant}/handbook.docx"].document.format == "docx"
    assert {d: q.reason_code for d, q in quarantined.items()} == {
        f"fs:{tenant}/corrupt.pdf": "corrupt_pdf",
        f"fs:{tenant}/zip_bomb.docx": "zip_bomb",
    }
    for q in quarantined.values():
        assert q.stage == "parser" and q.meta is not None and q.meta.acl_groups == ("eng",)
    assert sorted(d.document_id or "" for d in dead) == sorted(quarantined)
    assert all(d.stage == "parser" for d in dead)

    metrics = parser.metrics()
    assert 'ragline_parsing_quarantined_total{reason_code="corrupt_pdf"} 1.0' in metrics
    assert 'ragline_parsing_documents_total{format="pdf"} 1.0' in metrics
    assert await parser.terminate_async(timeout_s=60) == 0
