"""Connector benchmark (not a test): filesystem scan/poll rate, intake decisions per second
on real Postgres, end-to-end source.changes -> doc.fetched through the service process,
and webhook latency. Starts a private stack in a temp dir and stops it afterwards.

    .venv/bin/python bench/connector_intake.py [--files 5000] [--events 2000]

Prints a JSON report (also written to bench/out/connector.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from _paths import add_quick
from aiokafka import AIOKafkaConsumer

from ragline.config import Settings
from ragline.connector.fs_source import FilesystemSource, FsSourceConfig
from ragline.connector.fs_watch import FsWatcher
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage
from ragline.connector.webhook import sign
from ragline.events import BULK, DocumentMeta, EventBase, SourceUpsert, lane_topic
from ragline.hashing import content_hash, meta_hash
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.testing import (
    ServiceProcess,
    free_port,
    patched_environ,
    stack_env,
    unique_tenant,
)
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.stage import StageContext

PARA = (
    "The connector turns source changes into fetched documents. Change detection by "
    "content hash keeps unchanged documents out of the pipeline. "
)


def make_tree(root: Path, n: int) -> int:
    size = 0
    for i in range(n):
        folder = root / f"team-{i % 50:02d}"
        if not folder.exists():
            folder.mkdir(parents=True)
            (folder / "_policy.yaml").write_text(f"acl_groups: [team-{i % 50:02d}]\n")
        text = f"# Document {i}\n\n" + PARA * (8 + i % 16)
        (folder / f"doc-{i:05d}.md").write_text(text)
        size += len(text)
        if i % 10 == 0:
            (folder / f"doc-{i:05d}.md.meta.yaml").write_text(f"title: Doc {i}\nversion: '1'\n")
    return size


class NullSink:
    def __init__(self) -> None:
        self.n = 0

    async def publish(self, topic: str, event: EventBase) -> None:
        self.n += 1


async def bench_fs(settings: Settings, base: Path, n: int) -> dict[str, Any]:
    root = base / "tree"
    size = make_tree(root, n)
    src = FilesystemSource(FsSourceConfig(root=root, source="bench", tenant_id=unique_tenant()))
    t = time.perf_counter()
    scan = src.scan()
    scan_s = time.perf_counter() - t
    null = FsWatcher(src, NullSink())
    t = time.perf_counter()
    await null.poll_once()
    read_hash_s = time.perf_counter() - t
    async with EventPublisher(settings, service="bench") as pub:
        w = FsWatcher(src, pub)
        t = time.perf_counter()
        await w.poll_once()
        publish_s = time.perf_counter() - t
        t = time.perf_counter()
        idle = await w.poll_once()
        idle_s = time.perf_counter() - t
    assert not idle, idle
    return {
        "files": len(scan.docs),
        "mb": round(size / 1e6, 2),
        "scan_s": round(scan_s, 3),
        "scan_files_per_s": round(len(scan.docs) / scan_s),
        "first_poll_null_sink_files_per_s": round(n / read_hash_s),
        "first_poll_kafka_files_per_s": round(n / publish_s),
        "idle_poll_s": round(idle_s, 3),
    }


def upserts(tenant: str, n: int, seq: int = 1) -> list[SourceUpsert]:
    meta = DocumentMeta(acl_groups=("eng",), title="bench")
    return [
        SourceUpsert(
            tenant_id=tenant,
            document_id=f"bench:doc-{i}",
            source_seq=seq,
            meta=meta,
            content_text=f"# Doc {i}\n\n" + PARA * 16,
        )
        for i in range(n)
    ]


async def bench_stage(settings: Settings, n: int) -> dict[str, Any]:
    tenant = unique_tenant()
    stage = ConnectorStage(settings, ConnectorSettings())
    await stage.start()
    ctx = StageContext(settings=settings, logger=logging.getLogger("bench"))
    out: dict[str, Any] = {}
    try:
        events = upserts(tenant, n)
        t = time.perf_counter()
        for ev in events[: n // 2]:  # one at a time
            assert len(await stage.handle(ev, ctx)) == 1
        out["new_docs_per_s_single"] = round(n // 2 / (time.perf_counter() - t))
        t = time.perf_counter()
        rest = events[n // 2 :]
        for i in range(0, len(rest), 64):  # as the runtime delivers them: micro-batches
            results = await stage.handle_batch(rest[i : i + 64], ctx)
            assert all(isinstance(r, list) and len(r) == 1 for r in results)
        out["new_docs_per_s_batch64"] = round(len(rest) / (time.perf_counter() - t))
        # pretend the indexer wrote them (the version's ACL, and the status rows moved
        # from 'accepted', in flight, to 'indexed'), then replay: every one is 'unchanged'
        async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as c:
            for ev in events:
                await c.execute(
                    "INSERT INTO documents (tenant_id, document_id, content_hash, meta_hash,"
                    " source_seq, acl_seq, acl_groups, status)"
                    " VALUES (%s, %s, %s, %s, 1, 1, %s, 'indexed')",
                    (
                        tenant,
                        ev.document_id,
                        content_hash((ev.content_text or "").encode()),
                        meta_hash(ev.meta),
                        list(ev.meta.acl_groups),
                    ),
                )
            await c.execute(
                "UPDATE document_status SET status = 'indexed', stage = 'indexer',"
                " accepted_changes = NULL WHERE tenant_id = %s",
                (tenant,),
            )
            await c.commit()
        replay = upserts(tenant, n, seq=2)
        t = time.perf_counter()
        for i in range(0, len(replay), 64):
            assert all(r == [] for r in await stage.handle_batch(replay[i : i + 64], ctx))
        out["unchanged_docs_per_s_batch64"] = round(n / (time.perf_counter() - t))
    finally:
        await stage.stop()
    return out


async def count_fetched(settings: Settings, tenant: str, n: int, timeout_s: float) -> float:
    """When the ``n``-th doc.fetched of ``tenant`` arrived, in either lane (over its
    interactive budget a tenant's upserts travel in the bulk lane: docs/lanes.md)."""
    consumer = AIOKafkaConsumer(
        "doc.fetched",
        lane_topic("doc.fetched", BULK),
        bootstrap_servers=settings.kafka_bootstrap,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    seen = 0
    deadline = time.monotonic() + timeout_s
    try:
        while seen < n and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                seen += sum(1 for r in records if json.loads(r.value)["tenant_id"] == tenant)
    finally:
        await consumer.stop()
    if seen < n:
        raise RuntimeError(f"only {seen} of {n} doc.fetched arrived within {timeout_s:.0f} s")
    return time.monotonic()


async def bench_service(settings: Settings, base: Path, n: int) -> dict[str, Any]:
    tenant = unique_tenant()
    secret = "bench-secret"  # noqa: S105 - a throw-away local stack
    proc = ServiceProcess(
        "connector",
        env={**os.environ, "RAGLINE_CONNECTOR_WEBHOOK_SECRET": secret},
        log_path=base / "connector.log",
        metrics_port=free_port(),
        http_port=free_port(),
    )
    try:
        await proc.wait_metrics_async()
        async with EventPublisher(settings, service="bench") as pub:
            t0 = time.monotonic()
            for ev in upserts(tenant, n):
                await pub.publish("source.changes", ev)
            published = time.monotonic()
        done = await count_fetched(settings, tenant, n, timeout_s=300)
        out = {
            "events": n,
            "publish_s": round(published - t0, 2),
            "end_to_end_events_per_s": round(n / (done - t0)),
        }
        latencies = []
        async with httpx.AsyncClient(base_url=proc.http_url, timeout=10) as client:
            for _ in range(100):
                try:
                    await client.get("/healthz")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            for i in range(200):
                body = json.dumps(
                    {
                        "event_type": "source.upsert",
                        "tenant_id": tenant,
                        "document_id": f"hook:doc-{i}",
                        "source_seq": 1,
                        "meta": {"acl_groups": ["eng"]},
                        "content_text": PARA * 8,
                    }
                ).encode()
                t = time.perf_counter()
                r = await client.post(
                    "/v1/changes", content=body, headers={"X-Ragline-Signature": sign(secret, body)}
                )
                latencies.append(time.perf_counter() - t)
                assert r.status_code == 202, r.text
        latencies.sort()
        out["webhook_p50_ms"] = round(statistics.median(latencies) * 1000, 1)
        out["webhook_p95_ms"] = round(latencies[int(len(latencies) * 0.95)] * 1000, 1)
        return out
    finally:
        proc.cleanup()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--events", type=int, default=2000)
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.files, args.events = 40, 30
    with tempfile.TemporaryDirectory(prefix="ragline-connector-bench-") as tmp:
        base = Path(tmp)
        with patched_environ(stack_env(base / "state")):
            settings = Settings()
            manager = StackManager(settings, StackSettings(), detached=False)
            await manager.up()
            try:
                report = {
                    "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                    "fs": await bench_fs(settings, base, args.files),
                    "stage": await bench_stage(settings, args.events),
                    "service": await bench_service(settings, base, args.events),
                }
            finally:
                await manager.down()
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "connector.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
