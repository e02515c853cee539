"""A document of 10,000 child chunks through the whole pipeline, embedded in slices, with
the embedder SIGKILLed in the middle (not a test; docs/benchmarks.md "Huge documents in
slices").

On a private stack (temp dir, free ports) every service runs as its own process. One
document of ``--children`` paragraphs (the chunker's children capped at 32 tokens, so
each paragraph is one child) is published; the embedder embeds it in slices of
``RAGLINE_EMBEDDER_SLICE_TEXTS`` (one Kafka message each, handed on to doc.enriched.bulk,
embedding/stage.py). Once ``--kill-at`` of it is done the embedder is SIGKILLed and a
new one started. Meanwhile a reader polls what a query may see of the document.
Printed, and written to ``--json``:
- wall time, publish -> indexed; the embedder's time per message (each slice's poll, the
  completing one, from its log) against the consumer's max.poll.interval (600 s);
- texts the model computed (its metrics, every process) against the document's distinct
  texts: what the kill cost;
- lost / duplicated: child rows, distinct chunk ids, rows without a vector, in Postgres
  and OpenSearch; partial visibility: reader observations neither 0 nor the whole.

    .venv/bin/python bench/slices_bench.py [--children 10000] [--slice 512]
        [--kill-at 0.4] [--backend onnx-int8] [--json bench/out/slices.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from _paths import OUT, add_quick
from _services import service

from ragline.catalog import HTTP_SERVICES, SERVICES
from ragline.config import Settings
from ragline.events import DocumentMeta, SourceUpsert, Topics
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.testing import ServiceProcess, patched_environ, stack_env, stop_all
from ragline.runtime.publisher import EventPublisher
from ragline.store.os_client import make_client
from ragline.store.os_index import index_name
from ragline.store.rls import scoped_transaction

TENANT = "slices"
DOC = "handbook:huge"
WORDS = [
    "travel",
    "expense",
    "receipt",
    "hotel",
    "claim",
    "manager",
    "approval",
    "budget",
    "policy",
    "flight",
    "taxi",
    "meal",
    "conference",
    "training",
    "laptop",
]
_VISIBLE = (
    "SELECT count(*) FROM chunks c JOIN documents d"
    " ON d.tenant_id = c.tenant_id AND d.document_id = c.document_id"
    " WHERE c.tenant_id = %s AND c.document_id = %s AND c.level = 'child'"
    " AND d.status = 'indexed' AND c.generation = d.generation"
)
_MODEL_TEXTS = re.compile(r'^ragline_embedding_chunks_total\{source="model"\} (\S+)$', re.M)


def handbook(n: int) -> str:
    """``n`` distinct paragraphs of ~25 word pieces: ``n`` children at 32 tokens."""
    paras = []
    for i in range(n):
        words = " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(12))
        paras.append(f"Rule {i}: the {words} applies to case {i * 31 % 997}.")
    return "Handbook\n\n" + "\n\n".join(paras)


def embedder_lines(procs: list[ServiceProcess]) -> list[dict[str, Any]]:
    out = []
    for p in procs:
        for line in p.log().splitlines():
            if 'handed on after a slice"' in line or 'large document embedded"' in line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    return out


def model_texts(proc: ServiceProcess) -> float | None:
    try:
        m = _MODEL_TEXTS.search(proc.metrics(timeout_s=1.0))
    except OSError:
        return None
    return float(m.group(1)) if m else 0.0


class Embedders:
    """The embedder processes of the run: the current one, and every one before it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.all: list[ServiceProcess] = []
        self.computed: dict[int, float] = {}  # pid -> model texts, last scrape

    def start(self) -> ServiceProcess:
        p = service("embedder", self.base, f"embedder-{len(self.all)}")
        self.all.append(p)
        return p

    @property
    def current(self) -> ServiceProcess:
        return self.all[-1]

    def scrape(self) -> None:
        v = model_texts(self.current)
        if v is not None:
            self.computed[self.current.pid] = v


async def run(args: argparse.Namespace, base: Path, emb: Embedders) -> dict[str, Any]:
    settings = Settings()
    text = handbook(args.children)
    event = SourceUpsert(
        tenant_id=TENANT,
        document_id=DOC,
        source_seq=1,
        meta=DocumentMeta(
            title="Handbook", mime_type="text/plain", acl_groups=("all",), source_type="bench"
        ),
        content_text=text,
    )
    seen: list[int] = []
    stop = asyncio.Event()

    async def reader() -> None:
        async with await psycopg.AsyncConnection.connect(settings.query_dsn()) as conn:
            while not stop.is_set():
                async with scoped_transaction(conn, tenant_id=TENANT, groups=["all"]):
                    cur = await conn.execute(_VISIBLE, (TENANT, DOC))
                    row = await cur.fetchone()
                seen.append(int(row[0]) if row else 0)
                await asyncio.sleep(0.2)

    killed_at: dict[str, Any] = {}
    looking = asyncio.create_task(reader())
    t0 = time.perf_counter()
    async with EventPublisher(settings, service="bench") as pub:
        await pub.publish(Topics.SOURCE_CHANGES, event)
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn:
        while True:
            await asyncio.sleep(1.0)
            await asyncio.to_thread(emb.scrape)
            done = [ln["done"] for ln in embedder_lines(emb.all) if "done" in ln]
            if not killed_at and done and max(done) >= args.kill_at * args.children:
                killed_at = {"done": max(done), "at_s": round(time.perf_counter() - t0, 1)}
                await asyncio.to_thread(emb.current.kill)  # mid-slice, no warning
                print(f"SIGKILL embedder at {killed_at}", flush=True)
                await asyncio.sleep(2.0)
                await asyncio.to_thread(emb.start().wait_metrics, 300)
            cur = await conn.execute(
                "SELECT s.status, s.stage, s.reason_code, d.revision, d.os_revision"
                " FROM document_status s LEFT JOIN documents d"
                " ON d.tenant_id = s.tenant_id AND d.document_id = s.document_id"
                " WHERE s.tenant_id = %s AND s.document_id = %s",
                (TENANT, DOC),
            )
            row = await cur.fetchone()
            await conn.commit()
            if row and row[0] == "quarantined":
                raise RuntimeError(f"quarantined by {row[1]}: {row[2]}")
            if row and row[0] == "indexed" and row[3] is not None and row[3] == row[4]:
                break  # in Postgres and OpenSearch
            if time.perf_counter() - t0 > args.timeout:
                raise TimeoutError(f"not indexed after {args.timeout} s")
        wall = time.perf_counter() - t0
        await asyncio.sleep(1.0)
        stop.set()
        await looking
        status = row[0]
        cur = await conn.execute(
            "SELECT count(*), count(DISTINCT chunk_id), count(*) FILTER (WHERE embedding IS NULL),"
            " count(DISTINCT generation) FROM chunks"
            " WHERE tenant_id = %s AND document_id = %s AND level = 'child'",
            (TENANT, DOC),
        )
        rows, distinct, no_vector, generations = await cur.fetchone() or (0, 0, 0, 0)
    client = make_client(settings)
    try:
        await client.indices.refresh(index=index_name(settings.opensearch_index_prefix, TENANT))
        res = await client.count(
            index=index_name(settings.opensearch_index_prefix, TENANT),
            body={"query": {"term": {"document_id": DOC}}},
        )
        os_count = int(res["count"])
    finally:
        await client.close()
    lines = embedder_lines(emb.all)
    slices = [ln for ln in lines if "done" in ln]
    complete = [ln for ln in lines if "chunks" in ln]
    polls = [float(ln["poll_seconds"]) for ln in lines]
    computed = sum(emb.computed.values())
    partial = [n for n in seen if n not in (0, args.children)]
    report = {
        "children": args.children,
        "slice_texts": int(os.environ.get("RAGLINE_EMBEDDER_SLICE_TEXTS", "512")),
        "backend": os.environ.get("RAGLINE_EMBEDDER_BACKEND", "onnx-int8"),
        "status": status,
        "wall_s": round(wall, 1),
        "messages_handed_on": len(slices),
        "messages_completing": len(complete),
        "max_poll_seconds": round(max(polls), 2) if polls else None,
        "median_poll_seconds": round(sorted(polls)[len(polls) // 2], 2) if polls else None,
        "killed_at": killed_at,
        # per process, as its metrics last said (a killed process: up to 1 s stale, so
        # its unfinished slice's texts are not all in it); the restarted one computed
        # what was not done when the kill came: no finished slice was embedded again
        "model_texts_by_process": [emb.computed.get(p.pid, 0.0) for p in emb.all],
        "model_texts_computed": computed,
        "restarted_computed_vs_left": (
            [emb.computed.get(emb.all[-1].pid, 0.0), args.children - killed_at["done"]]
            if killed_at
            else None
        ),
        "pg_child_rows": rows,
        "pg_distinct_chunk_ids": distinct,
        "pg_rows_without_vector": no_vector,
        "pg_generations": generations,
        "opensearch_chunks": os_count,
        "lost": args.children - distinct,
        "duplicated": rows - distinct + max(0, os_count - distinct),
        "reader_observations": len(seen),
        "reader_partial_observations": len(partial),
        "reader_saw_whole": sum(1 for n in seen if n == args.children),
    }
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--children", type=int, default=10_000)
    ap.add_argument("--slice", type=int, default=None, help="RAGLINE_EMBEDDER_SLICE_TEXTS")
    ap.add_argument("--kill-at", type=float, default=0.4, help="fraction done; 0: no kill")
    ap.add_argument("--backend", default=None, help="torch | onnx | onnx-int8")
    ap.add_argument("--timeout", type=float, default=5400)
    ap.add_argument("--json", type=Path, default=OUT / "slices.json")
    add_quick(ap)  # here: a 300-child document in slices of 100
    args = ap.parse_args()
    if args.quick:
        args.children, args.slice = min(args.children, 300), args.slice or 100
    if args.kill_at <= 0:
        args.kill_at = 2.0  # never reached
    if args.backend:
        os.environ["RAGLINE_EMBEDDER_BACKEND"] = args.backend
    if args.slice:
        os.environ["RAGLINE_EMBEDDER_SLICE_TEXTS"] = str(args.slice)
    os.environ["RAGLINE_CHUNKER_CHILD_MAX_TOKENS"] = "32"  # one paragraph, one child
    OUT.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="ragline-bench-slices-"))
    with patched_environ(stack_env(base / "state")):
        os.environ.setdefault("RAGLINE_QUERY_JWT_SECRET", "bench-only-secret")
        manager = StackManager(Settings(), StackSettings(), detached=False)
        asyncio.run(manager.up())
        emb = Embedders(base)
        procs = [
            service(name, base)
            for name in SERVICES
            if name not in HTTP_SERVICES and name != "embedder"
        ]
        emb.start()
        try:
            for p in [*procs, emb.current]:
                p.wait_metrics(timeout_s=300)
            report = asyncio.run(run(args, base, emb))
        finally:
            stop_all([*procs, *emb.all])
            asyncio.run(manager.down())
    report["logs"] = str(base)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
