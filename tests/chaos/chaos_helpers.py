"""Helpers of the scale-out chaos test: the corpus, a fleet of replicated service
processes, a SIGKILL monkey, and a snapshot of both stores for one tenant that can be
compared across tenants (a uniquely named module, imported directly)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
from opensearchpy import AsyncOpenSearch

from ragline.config import Settings
from ragline.errors import BackendUnavailable
from ragline.evaluation.datasets import beir_document_text
from ragline.events import DocumentMeta, SourceUpsert, Topics
from ragline.platform.stack.testing import ServiceProcess, free_port, indexed_count, stop_all
from ragline.runtime.lag import wait_drained
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.topology import TOPOLOGY
from ragline.store.os_index import index_name

REPO_ROOT = Path(__file__).resolve().parents[2]

# vectors of one text computed in different batches may differ in the last float bits
VECTOR_ATOL = 1e-5

# every service that consumes a topic (the query service is stateless HTTP)
CONSUMERS = tuple(svc.name for svc in TOPOLOGY)


def scifact_corpus() -> Path | None:
    """SciFact's corpus.jsonl: ``RAGLINE_SCIFACT_DIR`` or the shared copy beside the
    checkout (../shared/eval/scifact, as the benchmarks find it)."""
    d = Path(os.environ.get("RAGLINE_SCIFACT_DIR", REPO_ROOT.parent / "shared/eval/scifact"))
    p = d / "corpus.jsonl"
    return p if p.is_file() else None


def _synthetic(n: int) -> Iterator[tuple[str, str, str]]:
    rng = random.Random(1729)
    words = [
        "gateway",
        "cluster",
        "replica",
        "backlog",
        "ledger",
        "partition",
        "offset",
        "quorum",
        "tenant",
        "index",
        "shard",
        "vector",
        "latency",
        "revision",
        "policy",
        "rollout",
        "canary",
        "incident",
        "audit",
        "schema",
        "migration",
    ]
    for i in range(n):
        body = " ".join(
            " ".join(rng.choice(words) for _ in range(rng.randint(8, 20))) + "."
            for _ in range(rng.randint(3, 12))
        )
        yield f"syn-{i:05d}", f"Note {i} on {rng.choice(words)}", body


def corpus(n: int) -> list[tuple[str, str, str]]:
    """``n`` (id, title, text): SciFact abstracts when the data is there, else a
    deterministic synthetic corpus of the same shape."""
    path = scifact_corpus()
    if path is None:
        return list(_synthetic(n))
    out: list[tuple[str, str, str]] = []
    with path.open() as f:
        for line in f:
            row = json.loads(line)
            out.append((str(row["_id"]), row.get("title") or "", row.get("text") or ""))
            if len(out) >= n:
                break
    return out


def upserts(tenant: str, docs: list[tuple[str, str, str]]) -> list[SourceUpsert]:
    return [
        SourceUpsert(
            tenant_id=tenant,
            document_id=f"scifact:{doc_id}",
            source_seq=1,
            meta=DocumentMeta(
                source_type="beir",
                title=title or None,
                mime_type="text/markdown",
                acl_groups=("chaos",),
            ),
            content_text=beir_document_text(title, text),
        )
        for doc_id, title, text in docs
    ]


@dataclass
class Fleet:
    """``replicas`` processes of each consumer service, all in the stage's one group."""

    logs: Path
    env: Mapping[str, str]
    replicas: int
    procs: dict[tuple[str, int], ServiceProcess] = field(default_factory=dict)
    starts: int = 0

    def start(self, name: str, slot: int) -> ServiceProcess:
        self.starts += 1
        proc = ServiceProcess(
            name,
            env=dict(self.env),
            log_path=self.logs / f"{name}-{slot}.log",
            metrics_port=free_port(),
            http_port=free_port(),
            cwd=REPO_ROOT,
        )
        self.procs[(name, slot)] = proc
        return proc

    def start_all(self) -> None:
        for name in CONSUMERS:
            for slot in range(self.replicas):
                self.start(name, slot)

    async def wait_up(self) -> None:
        await asyncio.gather(
            *(p.wait_metrics_async(timeout_s=600) for p in self.procs.values() if p.running())
        )

    def revive(self) -> int:
        """Start again every slot whose process is gone; returns how many."""
        dead = [k for k, p in self.procs.items() if not p.running()]
        for name, slot in dead:
            self.start(name, slot)
        return len(dead)

    def stop(self) -> None:
        try:
            stop_all(self.procs.values())
        except subprocess.TimeoutExpired:  # a loaded machine: wait for the SIGKILLs
            for p in self.procs.values():
                p.proc.kill()
                p.proc.wait(timeout=120)

    def log_tail(self, chars: int = 3000) -> str:
        return "\n".join(
            f"--- {n}-{s}\n{p.log()[-chars:]}" for (n, s), p in sorted(self.procs.items())
        )


@dataclass
class Monkey:
    """Kills random replicas with SIGKILL: usually one, sometimes both replicas of a
    stage; restarts them at once or after a pause (their partitions move to the other
    replica meanwhile, and back on return). The next kill comes once the victims serve
    /metrics again (so the pipeline still progresses on a slow machine), sometimes at
    once: while the group is still rebalancing around the returning replica."""

    fleet: Fleet
    rng: random.Random
    kills: int = 0
    events: list[str] = field(default_factory=list)

    async def _pause(self, stop: asyncio.Event, seconds: float) -> bool:
        try:
            await asyncio.wait_for(stop.wait(), seconds)
            return True
        except TimeoutError:
            return False

    async def run(self, stop: asyncio.Event) -> None:
        while not await self._pause(stop, self.rng.uniform(0.0, 8.0)):
            name = self.rng.choice(CONSUMERS)
            slots = (
                list(range(self.fleet.replicas))
                if self.rng.random() < 0.2
                else [self.rng.randrange(self.fleet.replicas)]
            )
            for slot in slots:
                proc = self.fleet.procs[(name, slot)]
                if proc.running():
                    await asyncio.to_thread(proc.kill)
                    self.kills += 1
            self.events.append(f"{time.strftime('%H:%M:%S')} kill {name}{slots}")
            if self.rng.random() < 0.5 and await self._pause(stop, self.rng.uniform(1.0, 15.0)):
                return
            restarted = [
                self.fleet.start(name, slot)
                for slot in slots
                if not self.fleet.procs[(name, slot)].running()
            ]
            if self.rng.random() < 0.25:
                continue  # kill again while the group is rebalancing
            for proc in restarted:
                # RuntimeError: it died (the next settle revives it)
                with contextlib.suppress(RuntimeError):
                    await proc.wait_metrics_async(timeout_s=600)


@dataclass(frozen=True)
class Snapshot:
    """One tenant's stores, keyed without the tenant so two tenants compare."""

    documents: dict[str, tuple[Any, ...]]  # document_id -> (status, hash, generation, chunks)
    chunks: dict[str, tuple[Any, ...]]  # chunk_id -> (document_id, ordinal, level, parent, text)
    vectors: dict[str, list[float]]
    chunk_rows: int
    os_ids: dict[str, tuple[str, str]]  # the chunk_id an OpenSearch doc holds -> (doc, text)
    os_hits: int
    status: dict[str, str]
    # rows per natural key: a position of a document ((document_id, level, ordinal) in
    # Postgres, (document_id, ordinal) of a child in OpenSearch) held by more than one
    # row is a doubled effect whatever ids the rows carry (fresh ids, auto ids)
    pg_positions: int = 0
    os_positions: int = 0


async def snapshot(
    settings: Settings, client: AsyncOpenSearch, tenant: str, page: int = 2000
) -> Snapshot:
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT document_id, status, content_hash, generation, chunk_count"
            " FROM documents WHERE tenant_id = %s",
            (tenant,),
        )
        documents = {r[0]: tuple(r[1:]) for r in await cur.fetchall()}
        cur = await conn.execute(
            "SELECT chunk_id, document_id, ordinal, level, parent_id, text, embedding::real[]"
            " FROM chunks WHERE tenant_id = %s",
            (tenant,),
        )
        rows = await cur.fetchall()
        cur = await conn.execute(
            "SELECT document_id, status FROM document_status WHERE tenant_id = %s", (tenant,)
        )
        status = {r[0]: r[1] for r in await cur.fetchall()}
    chunks = {r[0]: tuple(r[1:6]) for r in rows}
    vectors = {r[0]: list(r[6]) for r in rows if r[6] is not None}
    index = index_name(settings.opensearch_index_prefix, tenant)
    await client.indices.refresh(index=index)
    os_ids: dict[str, tuple[str, str]] = {}
    positions: set[tuple[str, int]] = set()
    hits = 0
    start = 0
    while True:
        resp = await client.search(
            index=index,
            body={
                "from": start,
                "size": page,
                "query": {"match_all": {}},
                "sort": [{"chunk_id": "asc"}],
            },
        )
        batch = resp["hits"]["hits"]
        for h in batch:
            src = h["_source"]
            os_ids[src["chunk_id"]] = (src["document_id"], src["text"])
            positions.add((src["document_id"], int(src["ordinal"])))
        hits += len(batch)
        if len(batch) < page:
            break
        start += page
    return Snapshot(
        documents=documents,
        chunks=chunks,
        vectors=vectors,
        chunk_rows=len(rows),
        os_ids=os_ids,
        os_hits=hits,
        status=status,
        pg_positions=len({(r[1], r[3], r[2]) for r in rows}),
        os_positions=len(positions),
    )


async def publish_all(settings: Settings, events: list[SourceUpsert]) -> None:
    async with EventPublisher(settings, service="chaos-source") as pub:
        for start in range(0, len(events), 100):
            await asyncio.gather(
                *(pub.publish(Topics.SOURCE_CHANGES, e) for e in events[start : start + 100])
            )


async def terminal_count(settings: Settings, tenant: str, *, retry_s: float = 120.0) -> int:
    """Documents of ``tenant`` indexed in both stores. Retries for at most ``retry_s``
    while Postgres refuses connections (stopped, starting, in crash recovery: the
    Postgres fault test reads while it comes back), then raises."""
    deadline = time.monotonic() + retry_s
    while True:
        try:
            return await indexed_count(settings.admin_dsn(), tenant)
        except psycopg.OperationalError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(1.0)


async def settle(
    settings: Settings,
    fleet: Fleet,
    tenant: str,
    n_docs: int,
    deadline: float,
    *,
    revive: bool = True,
    quiet_s: float | None = None,
) -> None:
    """Every replica up (``revive``: started again if gone), every stage drained, every
    document indexed in both stores.

    With ``quiet_s``, also returns once every stage has been drained and no further
    document indexed for that long although some are missing: every input is committed,
    so nothing will index them any more (an effect was lost); the caller's ``compare``
    counts them as lost instead of this waiting out the deadline."""
    indexed, quiet_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        if revive:
            fleet.revive()
        try:
            lags = await wait_drained(settings, CONSUMERS, timeout_s=30)
        except BackendUnavailable:  # the broker is on its way back
            await asyncio.sleep(1.0)
            quiet_since = time.monotonic()
            continue
        count = await terminal_count(settings, tenant)
        if sum(x.total for x in lags) != 0 or count != indexed:
            indexed, quiet_since = count, time.monotonic()
        elif quiet_s is not None and time.monotonic() - quiet_since >= quiet_s:
            print(json.dumps({"settled_short": {"tenant": tenant, "indexed": count}}))
            return
        if sum(x.total for x in lags) == 0 and count >= n_docs:
            await asyncio.sleep(2.0)  # anything still in flight would show up now
            lags = await wait_drained(settings, CONSUMERS, timeout_s=5)
            if sum(x.total for x in lags) == 0:
                return
        else:
            await asyncio.sleep(1.0)
    behind = {x.stage: x.total for x in await wait_drained(settings, CONSUMERS, timeout_s=1)}
    raise AssertionError(
        f"not settled: lag {behind}, {await terminal_count(settings, tenant)}/{n_docs} indexed"
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
    # by id and by natural key: a row id is unique by construction (primary key, _id),
    # so only the natural key can show an effect applied twice under a new id
    dup_rows = got.chunk_rows - min(len(got.chunks), got.pg_positions)
    dup_os = got.os_hits - min(len(got.os_ids), got.os_positions)
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
        "duplicated_rows": dup_rows,
        "duplicated_os_docs": dup_os,
        "lost_documents": lost_docs[:20],
        "regenerated_documents": regenerated[:20],
        "differing_documents": differing_docs[:20],
        "differing_chunks": differing_chunks[:20],
        "differing_os": differing_os[:20],
        "vector_mismatch": sorted(vector_mismatch)[:20],
        "max_vector_abs_diff": max_diff,
        "status_not_indexed": not_indexed[:20],
    }


def assert_same_stores(figures: dict[str, Any], report: str) -> None:
    """The verdict of ``compare``'s figures: 0 lost, 0 duplicated, nothing differing,
    every document indexed."""
    assert figures["lost"] == 0 and figures["duplicated"] == 0, report
    assert not figures["differing_documents"] and not figures["differing_chunks"], report
    assert not figures["differing_os"] and not figures["vector_mismatch"], report
    assert not figures["status_not_indexed"], report


async def webhook_post(
    url: str, secret: str, event: SourceUpsert, *, retry_s: float = 0.0
) -> httpx.Response:
    """POST one change to the connector's webhook; with ``retry_s``, again while it
    answers 503 (as a caller honouring Retry-After would), for at most that long."""
    deadline = time.monotonic() + retry_s
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=60) as client:
        while True:
            resp = await client.post(
                f"{url}/v1/changes", content=event.model_dump_json(), headers=headers
            )
            if resp.status_code != 503 or time.monotonic() >= deadline:
                return resp
            await asyncio.sleep(min(float(resp.headers.get("Retry-After", "1")), 2.0))
