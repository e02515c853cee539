"""Scale-out chaos (issue 12): two replicas of every consumer service in the stages' own
consumer groups, a corpus of 1,000+ documents ingested while random replicas are
SIGKILLed and restarted (also while their group is still rebalancing). The stores must
end identical to a fault-free run of the same corpus (one replica each, no kills, run
first):
same documents, chunk ids, texts and vectors in Postgres, same OpenSearch ids and
texts; 0 lost, 0 duplicated.

Not part of ``make test``: ``make chaos`` (``RAGLINE_CHAOS_DOCS``, default 1000;
``RAGLINE_CHAOS_SEED``; SciFact from ``RAGLINE_SCIFACT_DIR`` or ../shared/eval/scifact,
else a synthetic corpus). The fault-free run computes its vectors with the embedding
cache off, so "same vectors" compares two independent computations.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from chaos_helpers import CONSUMERS, Fleet, Monkey, Snapshot, corpus, snapshot, upserts
from opensearchpy import AsyncOpenSearch

from ragline.config import Settings
from ragline.events import SourceUpsert, Topics
from ragline.platform.stack.testing import unique_tenant
from ragline.runtime.lag import wait_drained
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.topics import topic_partitions
from ragline.store.os_client import make_client

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.skipif(not os.environ.get("RAGLINE_CHAOS"), reason="long: run by `make chaos`"),
]

N_DOCS = int(os.environ.get("RAGLINE_CHAOS_DOCS", "1000"))
SEED = int(os.environ.get("RAGLINE_CHAOS_SEED", str(random.SystemRandom().randrange(10**6))))
TIMEOUT_S = float(os.environ.get("RAGLINE_CHAOS_TIMEOUT_S", "5400"))
# vectors of one text computed in different batches may differ in the last float bits
VECTOR_ATOL = 1e-5


async def publish_all(settings: Settings, events: list[SourceUpsert]) -> None:
    async with EventPublisher(settings, service="chaos-source") as pub:
        for start in range(0, len(events), 100):
            await asyncio.gather(
                *(pub.publish(Topics.SOURCE_CHANGES, e) for e in events[start : start + 100])
            )


async def terminal_count(settings: Settings, tenant: str) -> int:
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM documents WHERE tenant_id = %s AND status = 'indexed'"
            " AND os_revision = revision",
            (tenant,),
        )
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def settle(settings: Settings, fleet: Fleet, tenant: str, deadline: float) -> None:
    """Every replica up, every stage drained, every document indexed in both stores."""
    while time.monotonic() < deadline:
        fleet.revive()
        lags = await wait_drained(settings, CONSUMERS, timeout_s=30)
        if sum(x.total for x in lags) == 0 and await terminal_count(settings, tenant) >= N_DOCS:
            await asyncio.sleep(2.0)  # anything still in flight would show up now
            lags = await wait_drained(settings, CONSUMERS, timeout_s=5)
            if sum(x.total for x in lags) == 0:
                return
    behind = {x.stage: x.total for x in await wait_drained(settings, CONSUMERS, timeout_s=1)}
    raise AssertionError(
        f"not settled: lag {behind}, {await terminal_count(settings, tenant)}/{N_DOCS} indexed"
        f"\n{fleet.log_tail()}"
    )


async def dead_letters(settings: Settings, tenant: str) -> int:
    """Dead letters of ``tenant`` on every DLQ topic (their keys are document ids)."""
    from aiokafka import AIOKafkaConsumer

    topics = [f"{t.value}.dlq" for t in Topics]
    consumer = AIOKafkaConsumer(
        *topics,
        bootstrap_servers=settings.kafka_bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    n = 0
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=1500)
            if not batch:
                return n
            for records in batch.values():
                for rec in records:
                    if tenant.encode() in rec.value:
                        n += 1
    finally:
        await consumer.stop()


def compare(base: Snapshot, got: Snapshot) -> dict[str, Any]:
    """Figures of ``got`` against the fault-free ``base``; lost/duplicated count both
    stores and both documents and chunks."""
    lost_docs = sorted(set(base.documents) - set(got.documents))
    lost_chunks = set(base.chunks) - set(got.chunks)
    lost_os = set(base.os_ids) - set(got.os_ids)
    extra_chunks = set(got.chunks) - set(base.chunks)
    extra_os = set(got.os_ids) - set(base.os_ids)
    dup_rows = got.chunk_rows - len(got.chunks)
    dup_os = got.os_hits - len(got.os_ids)
    regenerated = sorted(d for d, v in got.documents.items() if v[2] != 1)
    differing_chunks = sorted(
        c for c in set(base.chunks) & set(got.chunks) if base.chunks[c] != got.chunks[c]
    )
    differing_os = sorted(
        i for i in set(base.os_ids) & set(got.os_ids) if base.os_ids[i] != got.os_ids[i]
    )
    differing_docs = sorted(
        d
        for d in set(base.documents) & set(got.documents)
        if (base.documents[d][0], base.documents[d][1], base.documents[d][3])
        != (got.documents[d][0], got.documents[d][1], got.documents[d][3])
    )
    max_diff = 0.0
    vector_mismatch = sorted(set(base.vectors) ^ set(got.vectors))
    for c in set(base.vectors) & set(got.vectors):
        d = float(np.max(np.abs(np.asarray(base.vectors[c]) - np.asarray(got.vectors[c]))))
        max_diff = max(max_diff, d)
        if d > VECTOR_ATOL:
            vector_mismatch.append(c)
    not_indexed = sorted(d for d, s in got.status.items() if s != "indexed")
    return {
        "documents": len(got.documents),
        "chunks": len(got.chunks),
        "vectors": len(got.vectors),
        "opensearch_docs": len(got.os_ids),
        "lost": len(lost_docs) + len(lost_chunks) + len(lost_os),
        "duplicated": len(extra_chunks) + len(extra_os) + dup_rows + dup_os + len(regenerated),
        "lost_documents": lost_docs[:20],
        "regenerated_documents": regenerated[:20],
        "differing_documents": differing_docs[:20],
        "differing_chunks": differing_chunks[:20],
        "differing_os": differing_os[:20],
        "vector_mismatch": sorted(vector_mismatch)[:20],
        "max_vector_abs_diff": max_diff,
        "status_not_indexed": not_indexed[:20],
    }


async def test_scaleout_chaos_matches_fault_free_run(stack: Settings, tmp_path: Path) -> None:
    parts = await topic_partitions(stack.kafka_bootstrap, [str(t) for t in Topics])
    assert min(parts.values()) >= 2, f"topics need partitions for two replicas: {parts}"
    docs = corpus(N_DOCS)
    assert len(docs) == N_DOCS
    rng = random.Random(SEED)
    client: AsyncOpenSearch = make_client(stack)
    figures: dict[str, Any] = {"seed": SEED, "partitions": min(parts.values())}
    deadline = time.monotonic() + TIMEOUT_S
    try:
        # 1. fault-free first, one replica each, vectors computed without the cache
        base_tenant = unique_tenant("base")
        env = {**os.environ, "RAGLINE_EMBEDDER_CACHE": "false"}
        fleet = Fleet(logs=tmp_path / "base", env=env, replicas=1)
        fleet.start_all()
        try:
            await fleet.wait_up()
            t0 = time.monotonic()
            await publish_all(stack, upserts(base_tenant, docs))
            await settle(stack, fleet, base_tenant, deadline)
            figures["fault_free_seconds"] = round(time.monotonic() - t0, 1)
        finally:
            fleet.stop()
        base = await snapshot(stack, client, base_tenant)
        # 2. chaos: two replicas each, random SIGKILLs while the corpus flows through
        chaos_tenant = unique_tenant("chaos")
        fleet = Fleet(logs=tmp_path / "chaos", env=dict(os.environ), replicas=2)
        fleet.start_all()
        try:
            await fleet.wait_up()
            monkey = Monkey(fleet, rng)
            stop = asyncio.Event()
            t0 = time.monotonic()
            killer = asyncio.create_task(monkey.run(stop))
            await publish_all(stack, upserts(chaos_tenant, docs))
            while time.monotonic() < deadline:
                if killer.done():
                    killer.result()
                if await terminal_count(stack, chaos_tenant) >= N_DOCS:
                    break
                await asyncio.sleep(1.0)
            stop.set()
            await killer
            await settle(stack, fleet, chaos_tenant, deadline)
            figures["chaos_seconds"] = round(time.monotonic() - t0, 1)
            figures["kills"] = monkey.kills
            figures["process_starts"] = fleet.starts
            figures["kill_log"] = monkey.events
        finally:
            fleet.stop()
        got = await snapshot(stack, client, chaos_tenant)
        figures["chaos_dead_letters"] = await dead_letters(stack, chaos_tenant)

    finally:
        await client.close()

    figures.update(compare(base, got))
    report = json.dumps(figures, indent=2, default=str)
    print(f"\nchaos figures:\n{report}")
    out = os.environ.get("RAGLINE_CHAOS_REPORT")
    if out:
        Path(out).write_text(report + "\n")
    assert figures["kills"] > 0, report
    assert len(base.documents) == N_DOCS, report
    assert figures["lost"] == 0 and figures["duplicated"] == 0, report
    assert not figures["differing_documents"] and not figures["differing_chunks"], report
    assert not figures["differing_os"] and not figures["vector_mismatch"], report
    assert not figures["status_not_indexed"] and figures["chaos_dead_letters"] == 0, report
