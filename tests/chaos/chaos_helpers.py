"""Helpers of the scale-out chaos test: the corpus, a fleet of replicated service
processes, a SIGKILL monkey, and a snapshot of both stores for one tenant that can be
compared across tenants (a uniquely named module, imported directly)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from opensearchpy import AsyncOpenSearch

from ragline.config import Settings
from ragline.evaluation.datasets import beir_document_text
from ragline.events import DocumentMeta, SourceUpsert
from ragline.platform.stack.testing import ServiceProcess, free_port
from ragline.runtime.topology import TOPOLOGY
from ragline.store.os_index import index_name

REPO_ROOT = Path(__file__).resolve().parents[2]

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
        for p in self.procs.values():
            p.cleanup()

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
    os_ids: dict[str, tuple[str, str]]  # OpenSearch _id -> (document_id, text)
    os_hits: int
    status: dict[str, str]


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
            os_ids[h["_id"]] = (h["_source"]["document_id"], h["_source"]["text"])
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
    )
