"""Whole-pipeline benchmark (not a test): SciFact abstracts through every service.

On a private stack (temp dir, free ports), every service runs as its own process exactly
as in production. Measured in one run:
- pipeline ingest throughput: documents/s and child chunks/s from publishing the first
  SourceUpsert to the last document indexed (Postgres and OpenSearch written);
- the embedder alone on the same child texts (same model and backend, the stage's
  adaptive model calls, in-process, no cache) and the ratio pipeline / embedder-alone (a
  pipelined system should approach its bottleneck; target >= 0.8); ``--backend`` picks
  the embedder backend of both (torch, onnx, onnx-int8; ``make bench`` runs each);
- freshness: change event -> document indexed (searchable), p50/p95, idle and while the
  backfill is running;
- where the time goes, per service over the backfill: CPU seconds (``/proc``: user +
  system, its heavy-document children included) and handler seconds (the runtime's
  ``ragline_handler_seconds`` sum), and each service's CPU share. On a 2-core machine
  every service competes for the cores the embedder alone had to itself, so the ratio
  pipeline / embedder-alone is about the embedder's share of the pipeline's CPU.

``--idle N``: first N seconds with nothing to do, each service's CPU per 100 s of it.
``--own-core``: the embedder service runs on a core of its own (the last usable CPU) and
every other process (the other services, Kafka, OpenSearch, PostgreSQL, this script) on
the rest, as an embedder pod with its own CPU request would; the embedder-alone run then
gets the same one core. Without it every process shares every core.

Beside the ratio, what explains it: the embedder service's CPU-ms per chunk against the
model alone's (the stage's own event, cache and publish work runs on the same cores), the
share of the wall its handler was busy (fill before it, drain after it), and the engines'
CPU (each server and its worker processes) beside the services'.
``--quick``: 40 documents, no freshness probes, no plot (``make bench --quick``).

    .venv/bin/python bench/pipeline_bench.py [--docs 1000] [--probes 15] [--backend onnx]
        [--json bench/out/pipeline_onnx.json] [--idle 30] [--own-core] [--quick]

Writes bench/out/pipeline.json (or ``--json``) and bench/out/pipeline_freshness.png.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
from _paths import SCIFACT, SKIPPED, add_quick, scifact
from _services import service
from tqdm import tqdm

from ragline.catalog import HTTP_SERVICES, SERVICES
from ragline.config import Settings
from ragline.events import BULK, CONTENT_TOPICS, DocumentMeta, SourceUpsert, Topics, lane_topic
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.testing import ServiceProcess, patched_environ, stack_env, stop_all
from ragline.runtime.publisher import EventPublisher

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"


def load_docs(n: int) -> list[dict[str, Any]]:
    docs = []
    with (SCIFACT / "corpus.jsonl").open() as fh:
        for line in fh:
            docs.append(json.loads(line))
            if len(docs) >= n:
                break
    return docs


def upsert(
    tenant: str, doc: dict[str, Any], seq: int = 1, suffix: str = "", note: str = ""
) -> SourceUpsert:
    """A SciFact abstract as a source change (``suffix`` on the id, ``note`` on the text)."""
    return SourceUpsert(
        tenant_id=tenant,
        document_id=f"scifact:{doc['_id']}{suffix}",
        source_seq=seq,
        meta=DocumentMeta(
            title=doc["title"], mime_type="text/plain", acl_groups=("all",), source_type="bench"
        ),
        content_text=f"{doc['title']}\n\n{doc['text']}{note}",
    )


async def indexed_count(conn: psycopg.AsyncConnection[Any], tenant: str) -> int:
    cur = await conn.execute(
        "SELECT count(*) FROM document_status WHERE tenant_id = %s"
        " AND status IN ('indexed', 'quarantined')",
        (tenant,),
    )
    row = await cur.fetchone()
    await conn.commit()
    return int(row[0]) if row else 0


async def wait_doc(conn: psycopg.AsyncConnection[Any], tenant: str, doc_id: str) -> None:
    while True:
        cur = await conn.execute(
            "SELECT status FROM document_status WHERE tenant_id = %s AND document_id = %s",
            (tenant, doc_id),
        )
        row = await cur.fetchone()
        await conn.commit()
        if row and row[0] == "indexed":
            return
        await asyncio.sleep(0.05)


async def probe_freshness(
    settings: Settings, pub: EventPublisher, tenant: str, docs: list[dict[str, Any]], tag: str
) -> list[float]:
    """Publish one change at a time and time it until it is indexed."""
    out = []
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn:
        for i, doc in enumerate(docs):
            ev = upsert(tenant, doc, suffix=f"-{tag}-{i}")
            t0 = time.perf_counter()
            await pub.publish(Topics.SOURCE_CHANGES, ev)
            await asyncio.wait_for(wait_doc(conn, tenant, ev.document_id), timeout=600)
            out.append(time.perf_counter() - t0)
    return out


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and of its waited-for children (``/proc``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU of ``root`` and of every live process below it (PostgreSQL's
    backends, say), each with its reaped children: an engine's whole CPU."""
    stats: dict[int, list[str]] = {}
    below: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = fields
        below.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += sum(int(f) for f in stats[pid][11:15])
            todo += below.get(pid, [])
    return total / _TICK


def engine_pids(manager: StackManager) -> dict[str, int]:
    """The running engines' server pids, by component name."""
    pids = {c.value: srv.pid() for c, srv in manager.servers.items()}
    return {name: pid for name, pid in pids.items() if pid}


def metrics_text(proc: ServiceProcess) -> str:
    """One service's Prometheus text ("" when it does not answer)."""
    try:
        return proc.metrics(timeout_s=2.0)
    except OSError:
        return ""


def metric_sum(text: str, name: str) -> float:
    """The sum of a histogram ``name`` (every label) in a service's metrics ``text``."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(f"{name}_sum")
    )


def handler_seconds(proc: ServiceProcess) -> float:
    """The runtime's ``ragline_handler_seconds`` sum of one service (every topic)."""
    return metric_sum(metrics_text(proc), "ragline_handler_seconds")


def wait_consuming(proc: ServiceProcess, timeout_s: float = 300.0) -> None:
    """Until the consumer's ``/readyz`` (beside its ``/metrics``) answers 200: its stage
    is started (detectors and models loaded) and its consumers run."""
    url = proc.metrics_url.removesuffix("/metrics") + "/readyz"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310
                if resp.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{proc.name}: {url} not ready within {timeout_s:.0f} s")
        time.sleep(0.3)


# the topics one backfill document passes through, in pipeline order (both lanes read)
TIMELINE_TOPICS = (*CONTENT_TOPICS, Topics.DOC_INDEXED)
TIMELINE_MARKS = (10, 50, 90, 100)
MODEL_SECONDS = "ragline_embedding_model_seconds"  # the embedder's model calls (histogram)
POLL_PHASES = "ragline_embedding_poll_phase_seconds_total{"  # inside the embedder's handle
# what the slow stages' handler time is made of (histograms of their own, seconds)
INSIDE = {
    "embedder": (MODEL_SECONDS,),  # and its poll phases (POLL_PHASES, below)
    "indexer": ("ragline_indexing_pg_write_seconds", "ragline_indexing_os_sync_seconds"),
}


def inside_seconds(procs: list[ServiceProcess]) -> dict[str, float]:
    """``service/metric`` -> the histogram's sum now, for the ``INSIDE`` metrics, and
    ``service/<phase>`` -> the runtime's seconds per consumer phase (handle, produce,
    commit, gate, idle: ``ragline_stage_seconds_total``, both lanes added)."""
    out: dict[str, float] = {}
    for p in procs:
        text = metrics_text(p)  # one scrape per service
        out |= {f"{p.name}/{m}": metric_sum(text, m) for m in INSIDE.get(p.name, ())}
        for line in text.splitlines():
            for family, tag in (("ragline_stage_seconds_total{", ""), (POLL_PHASES, "poll ")):
                if line.startswith(family) and 'phase="' in line:
                    phase = line.split('phase="', 1)[1].split('"', 1)[0]
                    key = f"{p.name}/{tag}{phase}"
                    out[key] = out.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


async def stage_timeline(settings: Settings, since_ms: int) -> dict[str, dict[str, float]]:
    """Per output topic: records appended since ``since_ms`` (epoch ms) and the seconds
    after it at which 10/50/90/100 % of them had been appended (the broker's record
    timestamps, both lanes; a document handed on in slices counts once per pass). Shows
    where documents wait: a stage whose marks trail its input's is the one behind."""
    from aiokafka import AIOKafkaConsumer

    from ragline.runtime.kafka_security import aiokafka_options
    from ragline.runtime.lag import partitions_of
    from ragline.runtime.topology import physical_topic

    prefix = settings.kafka_topic_prefix
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        enable_auto_commit=False,
        **aiokafka_options(settings),
    )
    await consumer.start()
    out: dict[str, dict[str, float]] = {}
    try:
        for topic in TIMELINE_TOPICS:
            names = [physical_topic(topic.value, prefix)]
            if topic is not Topics.DOC_INDEXED:
                names.append(physical_topic(lane_topic(topic.value, BULK), prefix))
            tps = await partitions_of(consumer, names)
            if not tps:
                continue
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            stamps: list[float] = []
            while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
                batch = await consumer.getmany(timeout_ms=1000, max_records=5000)
                stamps += [
                    (r.timestamp - since_ms) / 1000
                    for recs in batch.values()
                    for r in recs
                    if r.timestamp >= since_ms
                ]
            row: dict[str, float] = {"records": float(len(stamps))}
            row |= {f"p{m}_s": round(pct(stamps, m), 2) for m in TIMELINE_MARKS}
            out[topic.value] = row
    finally:
        await consumer.stop()
    return out


def per_stage(
    procs: list[ServiceProcess], before: dict[str, tuple[float, float]], wall: float
) -> dict[str, dict[str, float]]:
    """CPU and handler seconds per service since ``before``, and each one's CPU share."""
    out: dict[str, dict[str, float]] = {}
    for p in procs:
        cpu0, busy0 = before[p.name]
        out[p.name] = {
            "cpu_s": round(cpu_seconds(p.pid) - cpu0, 2),
            "handler_s": round(handler_seconds(p) - busy0, 2),
        }
    total = sum(v["cpu_s"] for v in out.values()) or 1.0
    for v in out.values():
        v["cpu_share"] = round(v["cpu_s"] / total, 3)
        v["cores_busy"] = round(v["cpu_s"] / wall, 2)
    return out


async def run(
    args: argparse.Namespace, procs: list[ServiceProcess], engines: dict[str, int]
) -> dict[str, Any]:
    settings = Settings()
    tenant = "bench"
    docs = load_docs(args.docs + 2 * args.probes)
    backfill, probes_idle, probes_busy = (
        docs[: args.docs],
        docs[args.docs : args.docs + args.probes],
        docs[args.docs + args.probes :],
    )
    report: dict[str, Any] = {"docs": len(backfill), "machine": f"{os.cpu_count()} cores"}
    if args.idle > 0:  # what each service burns doing nothing (polls, probes, health loops)
        idle0 = {p.name: cpu_seconds(p.pid) for p in procs}
        idle0 |= {f"engine {n}": tree_cpu_seconds(pid) for n, pid in engines.items()}
        await asyncio.sleep(args.idle)
        idle1 = {p.name: cpu_seconds(p.pid) for p in procs}
        idle1 |= {f"engine {n}": tree_cpu_seconds(pid) for n, pid in engines.items()}
        report["idle_cpu_s_per_100s"] = {
            n: round((idle1[n] - idle0[n]) * 100 / args.idle, 2) for n in idle0
        }
        print(f"idle CPU s per 100 s ({args.idle:.0f} s idle): {report['idle_cpu_s_per_100s']}")
    async with EventPublisher(settings, service="bench") as pub:
        idle = await probe_freshness(settings, pub, tenant, probes_idle, "idle")
        report["freshness_idle_s"] = {"p50": pct(idle, 50), "p95": pct(idle, 95), "n": len(idle)}
        print(f"freshness idle: p50 {pct(idle, 50):.2f} s  p95 {pct(idle, 95):.2f} s")
        async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn:
            base = await indexed_count(conn, tenant)
            before = {p.name: (cpu_seconds(p.pid), handler_seconds(p)) for p in procs}
            engines0 = {name: tree_cpu_seconds(pid) for name, pid in engines.items()}
            inside0 = inside_seconds(procs)
            t0, t0_ms = time.perf_counter(), int(time.time() * 1000)
            for d in tqdm(backfill, desc="publish", unit="doc"):
                await pub.publish(Topics.SOURCE_CHANGES, upsert(tenant, d))
            busy_task = asyncio.create_task(
                probe_freshness(settings, pub, tenant, probes_busy, "busy")
            )
            bar = tqdm(total=len(backfill) + len(probes_busy), desc="indexed", unit="doc")
            done = 0
            while done < len(backfill) + len(probes_busy):
                await asyncio.sleep(0.5)
                now = await indexed_count(conn, tenant) - base
                bar.update(now - done)
                done = now
                if time.perf_counter() - t0 > args.timeout:
                    raise TimeoutError(f"only {done} documents indexed after {args.timeout} s")
            bar.close()
            wall = time.perf_counter() - t0
            stages = per_stage(procs, before, wall)
            inside = {
                k: round(v - inside0.get(k, 0.0), 2) for k, v in inside_seconds(procs).items()
            }
            engine_cpu = {
                name: round(tree_cpu_seconds(pid) - engines0[name], 2)
                for name, pid in engines.items()
            }
            busy = await busy_task
            timeline = await stage_timeline(settings, t0_ms)
            cur = await conn.execute(
                "SELECT c.text, c.contextual_header, c.token_count FROM chunks c"
                " WHERE c.tenant_id = %s AND c.level = 'child'",
                (tenant,),
            )
            rows = await cur.fetchall()
    children = len(rows)
    report["embedder_cpus"] = sorted(args.embedder_cpus or ())
    report["pipeline"] = {
        "wall_s": wall,
        "docs_per_s": len(backfill) / wall,
        "child_chunks": children,
        "chunks_per_s": children / wall,
    }
    report["engines_cpu_s"] = engine_cpu
    report["freshness_busy_s"] = {"p50": pct(busy, 50), "p95": pct(busy, 95), "n": len(busy)}
    report["per_stage"] = stages
    report["stage_timeline"] = timeline
    report["inside_handlers_s"] = inside
    report["load_average"] = os.getloadavg()
    print("per stage over the backfill (CPU s, share of the pipeline's CPU, handler s):")
    for name, v in sorted(stages.items(), key=lambda kv: -kv[1]["cpu_s"]):
        print(f"  {name:18s} {v['cpu_s']:8.1f} {v['cpu_share']:6.1%} {v['handler_s']:8.1f}")
    for name, cpu in engine_cpu.items():
        print(f"  engine {name:11s} {cpu:8.1f}")
    print("when each stage's output reached 10/50/90/100 % (s after the first publish):")
    for topic, row in timeline.items():
        marks = " ".join(f"{row[f'p{m}_s']:7.1f}" for m in TIMELINE_MARKS)
        print(f"  {topic:14s} {int(row['records']):6d} records {marks}")
    print("where each consumer's wall went (s; handle = the stage's own work):")
    for name in sorted({k.split("/", 1)[0] for k in inside}):
        parts = {k.split("/", 1)[1]: v for k, v in inside.items() if k.startswith(f"{name}/")}
        print(
            f"  {name:18s} "
            + "  ".join(f"{k.removeprefix('ragline_')} {v:.1f}" for k, v in parts.items())
        )
    print(f"pipeline: {len(backfill) / wall:.1f} docs/s, {children / wall:.1f} child chunks/s")
    print(f"freshness under backfill: p50 {pct(busy, 50):.2f} s  p95 {pct(busy, 95):.2f} s")

    from ragline.embedding.adaptive import (
        batch_sizer,
        estimate_tokens,
        model_batch_size,
        plan_batches,
    )
    from ragline.embedding.model import load_embedder
    from ragline.embedding.settings import EmbedderSettings

    if args.embedder_cpus:  # the core the embedder service had (model threads inherit it)
        os.sched_setaffinity(0, args.embedder_cpus)
    cfg = EmbedderSettings()  # the services' own (RAGLINE_EMBEDDER_BACKEND=--backend)
    model = load_embedder(
        cfg,
        threads=cfg.threads,
        batch_size=model_batch_size(cfg),
        parallel=cfg.texts_at_once(),  # as the stage loads it (stage.py)
    )
    texts = [f"{h.strip()}\n{t}" if h and h.strip() else t for t, h, _ in rows]
    lengths = [estimate_tokens(n, (h or "").strip()) for _, h, n in rows]
    sizer = batch_sizer(cfg)
    if sizer is None:
        calls = [
            list(range(i, min(i + cfg.batch_size, len(texts))))
            for i in range(0, len(texts), cfg.batch_size)
        ]
    else:  # the stage plans one poll (64 documents) at a time
        calls = []
        per_poll = max(1, round(len(texts) / max(1, len(backfill)) * 64))
        for s0 in range(0, len(texts), per_poll):
            part = lengths[s0 : s0 + per_poll]
            budget, most = sizer.token_budget, sizer.policy.max_batch
            calls += [
                [s0 + i for i in b] for b in plan_batches(part, token_budget=budget, max_batch=most)
            ]
    model.encode(texts[:64])  # warm-up
    t1, c1 = time.perf_counter(), time.process_time()
    for call in tqdm(calls, desc="embedder alone", unit="call"):
        model.encode([texts[i] for i in call])
    alone, alone_cpu = time.perf_counter() - t1, time.process_time() - c1
    report["embedder_backend"] = cfg.backend
    report["embedder_alone"] = {
        "wall_s": alone,
        "chunks_per_s": len(texts) / alone,
        "cpu_s": alone_cpu,
        "cores_busy": alone_cpu / alone,
    }
    # CPU accounting: with the same cores, the pipeline can at best run at the embedder
    # alone's CPU per chunk over every service's CPU per chunk (the brokers' and
    # databases' own CPU not even counted)
    services_cpu = sum(v["cpu_s"] for v in stages.values())
    report["cpu_bound_ratio"] = (alone_cpu / len(texts)) / max(1e-9, services_cpu / children)
    report["ratio_pipeline_to_embedder"] = (children / wall) / (len(texts) / alone)
    emb = stages.get("embedder", {})
    report["embedder_cpu_ms_per_chunk"] = {
        "service": round(emb.get("cpu_s", 0.0) * 1000 / max(1, children), 2),
        "alone": round(alone_cpu * 1000 / max(1, len(texts)), 2),
    }
    report["embedder_busy_share"] = round(emb.get("handler_s", 0.0) / wall, 3)
    # the share of the wall the model itself ran (its calls, from the stage's histogram):
    # the rest of the handler's time is the stage's own work and its waits (cache, Kafka)
    report["embedder_model_share"] = round(inside.get(f"embedder/{MODEL_SECONDS}", 0) / wall, 3)
    print(
        f"embedder alone: {len(texts) / alone:.1f} chunks/s on {alone_cpu / alone:.2f} cores; "
        f"pipeline/embedder = {report['ratio_pipeline_to_embedder']:.2f} (CPU bound: "
        f"{report['cpu_bound_ratio']:.2f}); embedder CPU-ms per chunk, service "
        f"{report['embedder_cpu_ms_per_chunk']['service']} vs alone "
        f"{report['embedder_cpu_ms_per_chunk']['alone']}; handler busy "
        f"{report['embedder_busy_share']:.0%} of the wall, the model "
        f"{report['embedder_model_share']:.0%}"
    )
    args.json.write_text(json.dumps(report, indent=2))
    if not args.quick:
        plot(idle, busy)
    return report


def plot(idle: list[float], busy: list[float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.boxplot([idle, busy], tick_labels=["idle", "under backfill"])
    ax.set_ylabel("change event -> indexed (s)")
    ax.set_title("ragline freshness")
    fig.tight_layout()
    fig.savefig(OUT / "pipeline_freshness.png", dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--probes", type=int, default=15)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--idle", type=float, default=0, help="first measure N s of idle CPU")
    ap.add_argument("--backend", default=None, help="torch | onnx | onnx-int8 (embedder)")
    ap.add_argument("--json", type=Path, default=OUT / "pipeline.json")
    ap.add_argument(
        "--own-core",
        action="store_true",
        help="the embedder on a core of its own, the rest on the others",
    )
    add_quick(ap)  # here: 40 documents, no probes
    args = ap.parse_args()
    scifact(quick=args.quick)  # or say where to get it (--quick: a skip)
    if args.quick:
        args.docs, args.probes = min(args.docs, 40), 0
    if args.backend:  # inherited by every service process and the embedder-alone run
        os.environ["RAGLINE_EMBEDDER_BACKEND"] = args.backend
    OUT.mkdir(parents=True, exist_ok=True)
    cores = sorted(os.sched_getaffinity(0))
    args.embedder_cpus, rest = None, set(cores)
    if args.own_core:
        if len(cores) < 2:
            print(f"pipeline_bench.py --own-core: needs 2 usable CPUs, this has {len(cores)}")
            raise SystemExit(SKIPPED if args.quick else 2)
        args.embedder_cpus, rest = {cores[-1]}, set(cores[:-1])
        os.sched_setaffinity(0, rest)  # inherited by the engines and the other services
    # a SIGTERM (kill, timeout) unwinds like Ctrl-C: the services and engines are stopped
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    base = Path(tempfile.mkdtemp(prefix="ragline-bench-"))
    with patched_environ(stack_env(base / "state")):
        os.environ.setdefault("RAGLINE_QUERY_JWT_SECRET", "bench-only-secret")
        settings = Settings()
        manager = StackManager(settings, StackSettings(), detached=False)
        asyncio.run(manager.up())
        procs = []
        for name in SERVICES:
            if name in HTTP_SERVICES:
                continue
            if args.embedder_cpus and name == "embedder":
                os.sched_setaffinity(0, args.embedder_cpus)
                procs.append(service(name, base))  # the mask is inherited at fork
                os.sched_setaffinity(0, rest)
            else:
                procs.append(service(name, base))
        try:
            for p in procs:
                p.wait_metrics(timeout_s=300)
                wait_consuming(p)  # loaded and consuming: no start-up CPU in the window
            report = asyncio.run(run(args, procs, engine_pids(manager)))
        finally:
            stop_all(procs)
            asyncio.run(manager.down())
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
