"""The scanner service on the real stack: planted secrets/PII never reach doc.scanned, a
blocked document is quarantined with a redacted meta and value-free reason/findings, and
the service log carries none of the values."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer

from ragline.config import Settings
from ragline.events import DeadLetter, DocQuarantined, DocScanned, Topics, dlq_topic
from ragline.runtime.deadletter import WITHHELD_HEADER
from ragline.runtime.publisher import EventPublisher
from ragline.store.claimcheck import CLAIM_HEADER

sys.path.insert(0, str(Path(__file__).parents[2] / "unit"))
from scanning.helpers import planted_documents, planted_event

pytestmark = pytest.mark.integration

TOPICS = (Topics.DOC_SCANNED, Topics.DOC_QUARANTINED, dlq_topic(Topics.DOC_PARSED))


async def _collect(settings: Settings, tenant: str, want: int, timeout_s: float = 180.0
                   ) -> list[tuple[str, bytes]]:  # fmt: skip
    consumer = AIOKafkaConsumer(
        *TOPICS,
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=None,  # no group: every partition at once, no join wait (~5 s)
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    seen: list[tuple[str, bytes]] = []
    try:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while len(seen) < want and asyncio.get_running_loop().time() < deadline:
            for tp, msgs in (await consumer.getmany(timeout_ms=500)).items():
                for m in msgs:
                    if json.loads(m.value).get("tenant_id") == tenant:
                        seen.append((tp.topic, m.value))
    finally:
        await consumer.stop()
    return seen


async def test_scanner_service_end_to_end(
    stack: Settings, service_process: Any, tenant: str, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "rules:\n  - name: vault\n    match: {source_types: [vault]}\n"
        "    secrets: {private_key: block}\n"
    )
    scanner = service_process("scanner", env={"RAGLINE_SCANNER_POLICY_FILE": str(policy)})
    await scanner.wait_metrics_async(timeout_s=240)

    docs = planted_documents()
    events = [
        planted_event(d).model_copy(update={"tenant_id": tenant, "source_seq": i})
        for i, d in enumerate(docs, 1)
    ]
    keys = next(d for d in docs if d["id"] == "private-keys")
    blocked = planted_event(keys)
    blocked = blocked.model_copy(
        update={
            "tenant_id": tenant,
            "document_id": "vault:export-1",
            "meta": blocked.meta.model_copy(
                update={"source_type": "vault", "title": "dump AKIAPTGZ4JFEBZ9SDO78"}
            ),
        }
    )
    async with EventPublisher(stack) as pub:
        for ev in events:
            await pub.publish(Topics.DOC_PARSED, ev)
    # the blocked document goes through the claim check (a body over the broker limit)
    small = stack.model_copy(update={"kafka_max_message_bytes": 512})
    async with EventPublisher(small) as pub:
        await pub.publish(Topics.DOC_PARSED, blocked)

    seen = await _collect(stack, tenant, want=len(events) + 2)
    needles = [n for d in docs for n in d["needles"]]
    for topic, raw in seen:
        if topic == dlq_topic(Topics.DOC_PARSED):
            continue  # carries the original input for replay (see docs/scanning.md)
        text = raw.decode("utf-8")
        for i, n in enumerate(needles):
            assert n not in text, f"needle #{i} on {topic}"
    scanned = [DocScanned.model_validate_json(r) for t, r in seen if t == Topics.DOC_SCANNED]
    assert {s.document_id for s in scanned} == {e.document_id for e in events}
    (q,) = [DocQuarantined.model_validate_json(r) for t, r in seen if t == Topics.DOC_QUARANTINED]
    assert q.stage == "scanner" and q.reason_code == "secret_blocked"
    assert q.meta is not None and q.meta.title == "dump [REDACTED:aws_access_key]"
    assert q.findings is not None and q.findings.counts["secret:private_key"] >= 3
    dlq = dlq_topic(Topics.DOC_PARSED)
    (dl,) = [DeadLetter.model_validate_json(r) for t, r in seen if t == dlq]
    assert dl.error_class == "ScanBlocked" and dl.document_id == "vault:export-1"
    assert all(n not in dl.error_message for n in needles)
    # issue 13: the dead letter of a blocked document keeps no body and no reference to
    # one, and every stored raw body of the document is purged
    assert dl.original_b64 == "" and CLAIM_HEADER not in dl.original_headers
    assert dl.original_headers[WITHHELD_HEADER] == "secret_blocked"
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM claim_checks WHERE tenant_id = %s AND document_id = %s",
            (tenant, "vault:export-1"),
        )
        assert (await cur.fetchone()) == (0,)
        cur = await conn.execute("SELECT body FROM claim_checks")
        bodies = [bytes(r[0]) for r in await cur.fetchall()]
    assert not any(n.encode() in b for b in bodies for n in keys["needles"])

    metrics = scanner.metrics()
    assert 'ragline_scanner_documents_total{outcome="blocked"} 1.0' in metrics
    assert "ragline_scanner_findings_total" in metrics
    assert await scanner.terminate_async(timeout_s=60) == 0
    log = scanner.log()
    for i, n in enumerate(needles):
        assert n not in log, f"needle #{i} in the service log"
