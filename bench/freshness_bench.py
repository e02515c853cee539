"""Freshness benchmark (not a test): how fast a change becomes searchable, per lane,
idle and while a backfill runs, and behind very large documents (issue 18).

On a private stack (temp dir, free ports) every service runs as its own process, as in
production. Measured in one run:

- idle: a new document published in the interactive lane, then one in the bulk lane,
  each timed from publish to indexed (p50 / p95 / max per lane);
- under a backfill of ``--backfill`` SciFact abstracts published in the bulk lane (as
  ``ragline sync`` does): interactive content edits of already indexed documents, one
  after the other, each timed to indexed; the backfill's throughput (documents and
  child chunks per second) and its documents' own publish -> indexed times;
- behind a large document (a 5 MB single-line CSV, a 1M-line markdown file, a
  20k-column CSV) of one tenant: the time a one-line document of another tenant takes,
  the large document's own time, and each service's memory (RSS of its process tree)
  before, at peak and after.

``--baseline`` reproduces the code before the lanes: the backfill in the interactive
lane (the same topics and consumer as before) and no heavy-document offload
(``RAGLINE_CONNECTOR_HEAVY_BYTES=0``, ``RAGLINE_PARSER_HEAVY_BYTES=0``, no tenant
budget: ``RAGLINE_CONNECTOR_TENANT_INTERACTIVE_RATE=0``, the chunker's heaviness rule
off: ``RAGLINE_CHUNKER_HEAVY_{CHARS,BLOCKS,LINES,CELLS,CHILDREN}=0``, no memory release
after large messages: ``RAGLINE_RELEASE_MEMORY_BYTES=0``), so one checkout measures
before and after (the chunker's line-locator and wide-header speed-ups stay in both). A
large document the pipeline gives up on (over a stage's time bound, docs/lanes.md) ends
quarantined: its status and reason code are in the report.

    .venv/bin/python bench/freshness_bench.py [--backfill 5000] [--probes 15] [--baseline]
    .venv/bin/python bench/freshness_bench.py --large-only [--quick]  # the large documents only

Writes bench/out/freshness.json and bench/out/freshness.png (``freshness_baseline.*``
with ``--baseline``; ``*_large.json`` only with ``--large-only``): latency of each
interactive edit over the backfill's duration, with the backfill's progress.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg
from _paths import add_quick, scifact
from _stage_profile import StageProfiler, print_summary
from pipeline_bench import load_docs, pct, upsert
from tqdm import tqdm

from ragline.catalog import HTTP_SERVICES, SERVICES
from ragline.config import Settings
from ragline.events import BULK, INTERACTIVE, DocumentMeta, Lane, SourceUpsert, Topics
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.testing import (
    ServiceProcess,
    free_port,
    patched_environ,
    stack_env,
    stop_all,
)
from ragline.runtime.lanes import with_lane
from ragline.runtime.publisher import EventPublisher

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
TERMINAL = ("indexed", "quarantined")


# ----------------------------------------------------------------------------- inputs
def large_inputs(quick: bool) -> dict[str, tuple[str, str]]:
    """name -> (mime type, text) of the large documents of issue 18."""
    scale = 10 if quick else 1
    cols = ",".join(f"c{i}" for i in range(20_000))
    row = ",".join(str(i % 10) for i in range(20_000))
    single = "".join(f"v{i}," for i in range(5_000_000 // 8 // scale))
    lines = "".join(f"- item {i}\n" for i in range(1_000_000 // scale))
    return {
        "csv_single_line_5mb": ("text/csv", single),
        "markdown_1m_lines": ("text/markdown", lines),
        "csv_20k_columns": ("text/csv", f"{cols}\n{row}\n{row}\n"),
    }


def doc_event(tenant: str, doc_id: str, mime: str, text: str, seq: int = 1) -> SourceUpsert:
    return SourceUpsert(
        tenant_id=tenant,
        document_id=doc_id,
        source_seq=seq,
        meta=DocumentMeta(title=doc_id, mime_type=mime, acl_groups=("all",), source_type="bench"),
        content_text=text,
    )


# ----------------------------------------------------------------------------- probes
@dataclass
class Clock:
    """Publish -> terminal status of documents, polled from document_status."""

    conn: psycopg.AsyncConnection[Any]

    async def status(self, tenant: str, doc_id: str) -> tuple[str | None, int]:
        cur = await self.conn.execute(
            "SELECT status, source_seq FROM document_status"
            " WHERE tenant_id = %s AND document_id = %s",
            (tenant, doc_id),
        )
        row = await cur.fetchone()
        await self.conn.commit()
        return (row[0], int(row[1])) if row else (None, 0)

    async def wait(self, tenant: str, doc_id: str, seq: int, timeout_s: float) -> float:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout_s:
            status, at = await self.status(tenant, doc_id)
            if status in TERMINAL and at >= seq:
                return time.perf_counter() - t0
            await asyncio.sleep(0.05)
        raise TimeoutError(f"{doc_id} not indexed after {timeout_s} s")

    async def reason(self, tenant: str, doc_id: str) -> str | None:
        cur = await self.conn.execute(
            "SELECT reason_code FROM document_status WHERE tenant_id = %s AND document_id = %s",
            (tenant, doc_id),
        )
        row = await cur.fetchone()
        await self.conn.commit()
        return row[0] if row else None

    async def count(self, tenant: str) -> int:
        cur = await self.conn.execute(
            "SELECT count(*) FROM document_status WHERE tenant_id = %s AND status = ANY(%s)",
            (tenant, list(TERMINAL)),
        )
        row = await cur.fetchone()
        await self.conn.commit()
        return int(row[0]) if row else 0


async def timed(
    pub: EventPublisher, clock: Clock, event: SourceUpsert, timeout_s: float = 900
) -> float:
    t0 = time.perf_counter()
    await pub.publish(Topics.SOURCE_CHANGES, event)
    await clock.wait(event.tenant_id, event.document_id, event.source_seq, timeout_s)
    return time.perf_counter() - t0


def stats(xs: list[float]) -> dict[str, float | int]:
    if not xs:
        return {"n": 0}
    return {
        "n": len(xs),
        "p50": round(pct(xs, 50), 3),
        "p95": round(pct(xs, 95), 3),
        "max": round(max(xs), 3),
    }


# ----------------------------------------------------------------------------- memory
def rss_mb(procs: dict[str, ServiceProcess]) -> dict[str, float]:
    """RSS of each service's process tree (its worker processes included), MB."""
    out: dict[str, float] = {}
    for name, sp in procs.items():
        try:
            root = psutil.Process(sp.proc.pid)
            tree = [root, *root.children(recursive=True)]
            out[name] = round(sum(p.memory_info().rss for p in tree) / 2**20, 1)
        except psutil.Error:
            continue
    return out


@dataclass
class PeakRss:
    procs: dict[str, ServiceProcess]
    peak: dict[str, float] = field(default_factory=dict)

    async def watch(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            for k, v in (await asyncio.to_thread(rss_mb, self.procs)).items():
                self.peak[k] = max(v, self.peak.get(k, 0.0))
            await asyncio.sleep(0.5)


# ----------------------------------------------------------------------------- phases
async def idle_phase(
    pub: EventPublisher, clock: Clock, tenant: str, docs: list[dict[str, Any]]
) -> dict[str, Any]:
    lanes: dict[Lane, list[float]] = {INTERACTIVE: [], BULK: []}
    for i, d in enumerate(docs):
        lane: Lane = INTERACTIVE if i % 2 == 0 else BULK
        ev = with_lane(upsert(tenant, d, suffix=f"-idle-{i}"), lane)
        lanes[lane].append(await timed(pub, clock, ev))
    for lane, xs in lanes.items():
        print(f"idle {lane}: {stats(xs)}")
    return {lane: stats(xs) for lane, xs in lanes.items()}


async def backfill_phase(
    pub: EventPublisher,
    clock: Clock,
    tenant: str,
    backfill: list[dict[str, Any]],
    probes: list[dict[str, Any]],
    *,
    lane: Lane,
    timeout_s: float,
    edits_on: bool = True,
    profiler: StageProfiler | None = None,
) -> dict[str, Any]:
    """``edits_on`` False: throughput only (no interactive edits compete with the backfill,
    so two modes' documents/s compare like for like)."""
    # the probe documents exist before the backfill starts: a probe is a content edit
    for i, d in enumerate(probes):
        await timed(pub, clock, upsert(tenant, d, suffix=f"-edit-{i}"))
    base = await clock.count(tenant)
    published: dict[str, float] = {}
    stop = asyncio.Event()
    sampler = None
    if profiler is not None:
        await profiler.sample()
        sampler = asyncio.create_task(profiler.run(stop))
    t0 = time.perf_counter()
    for d in tqdm(backfill, desc=f"publish backfill ({lane})", unit="doc"):
        ev = with_lane(upsert(tenant, d), lane)
        await pub.publish(Topics.SOURCE_CHANGES, ev)
        published[ev.document_id] = time.perf_counter()
    publish_s = time.perf_counter() - t0
    edits: list[tuple[float, float]] = []  # (seconds since the backfill began, latency)
    progress: list[tuple[float, int]] = []
    done = 0
    i = 0
    bar = tqdm(total=len(backfill), desc="backfill indexed", unit="doc")
    while done < len(backfill):
        if time.perf_counter() - t0 > timeout_s:
            raise TimeoutError(f"only {done} backfill documents indexed after {timeout_s} s")
        if edits_on:
            d = probes[i % len(probes)]
            i += 1
            ev = upsert(
                tenant, d, seq=1 + i, suffix=f"-edit-{(i - 1) % len(probes)}", note=f" v{i}"
            )
            at = time.perf_counter() - t0
            edits.append((at, await timed(pub, clock, ev)))
        else:
            await asyncio.sleep(0.5)
        now = await clock.count(tenant) - base
        progress.append((time.perf_counter() - t0, now))
        bar.update(now - done)
        done = now
        await asyncio.sleep(0.5)
    bar.close()
    wall = time.perf_counter() - t0
    profile = None
    if sampler is not None and profiler is not None:
        stop.set()
        await sampler
        profile = profiler.summary(t0)
        print_summary(profile)
    cur = await clock.conn.execute(
        "SELECT d.document_id, extract(epoch FROM d.updated_at), count(c.chunk_id)"
        " FROM document_status d LEFT JOIN chunks c ON c.tenant_id = d.tenant_id"
        " AND c.document_id = d.document_id AND c.level = 'child'"
        " WHERE d.tenant_id = %s AND d.document_id = ANY(%s)"
        " GROUP BY d.document_id, d.updated_at",
        (tenant, list(published)),
    )
    rows = await cur.fetchall()
    await clock.conn.commit()
    children = sum(int(r[2]) for r in rows)
    # each backfill document's own publish -> indexed time (wall clock of this machine)
    offset = time.time() - time.perf_counter()
    own = [float(r[1]) - offset - published[r[0]] for r in rows]
    latencies = [x for _, x in edits]
    print(f"interactive edits under a {lane} backfill: {stats(latencies)}")
    print(f"backfill: {len(backfill) / wall:.2f} docs/s, {children / wall:.1f} child chunks/s")
    return {
        "backfill_lane": lane,
        "docs": len(backfill),
        "publish_s": round(publish_s, 2),
        "wall_s": round(wall, 2),
        "docs_per_s": round(len(backfill) / wall, 3),
        "child_chunks": children,
        "chunks_per_s": round(children / wall, 2),
        "interactive_edits_s": stats(latencies),
        "backfill_docs_s": stats(own),
        "edits": [(round(a, 2), round(x, 3)) for a, x in edits],
        "progress": progress,
        **({"profile": profile} if profile is not None else {}),
    }


async def large_phase(
    pub: EventPublisher,
    clock: Clock,
    procs: dict[str, ServiceProcess],
    *,
    quick: bool,
    timeout_s: float,
    save: Any,
    out: dict[str, Any],
    only: tuple[str, ...] = (),
) -> None:
    """Fills ``out`` (and saves the report) one large document at a time (``only``: these
    inputs, by name; empty: every one)."""
    for name, (mime, text) in large_inputs(quick).items():
        if only and name not in only:
            continue
        heavy = doc_event("heavy", f"bench:{name}", mime, text)
        other = doc_event("other", f"bench:one-line-{name}", "text/plain", "One line.")
        await asyncio.sleep(3)  # settle
        before = await asyncio.to_thread(rss_mb, procs)
        peak = PeakRss(procs)
        stop = asyncio.Event()
        watcher = asyncio.create_task(peak.watch(stop))
        t0 = time.perf_counter()
        heavy_task = asyncio.create_task(timed(pub, clock, heavy, timeout_s=timeout_s))
        await asyncio.sleep(1.0)  # the large document is in the pipeline
        try:
            one_line: float | None = await timed(pub, clock, other, timeout_s=timeout_s)
        except TimeoutError:
            one_line = None  # still waiting after timeout_s
        try:
            heavy_s: float | None = await heavy_task
        except TimeoutError:
            heavy_s = None  # still in the pipeline after timeout_s
        stop.set()
        await watcher
        await asyncio.sleep(5)
        after = await asyncio.to_thread(rss_mb, procs)
        status, _ = await clock.status("heavy", heavy.document_id)
        reason = await clock.reason("heavy", heavy.document_id)
        out[name] = {
            "bytes": len(text.encode()),
            # None: not indexed within --large-timeout
            "one_line_other_tenant_s": None if one_line is None else round(one_line, 3),
            "large_document_s": None if heavy_s is None else round(heavy_s, 3),
            "large_document_status": status,
            "large_document_reason": reason,  # the reason code of a quarantine
            "rss_mb": {
                k: {"before": before.get(k), "peak": peak.peak.get(k), "after": after.get(k)}
                for k in procs
            },
            "wall_s": round(time.perf_counter() - t0, 2),
        }
        print(f"{name}: one-line doc of another tenant {one_line} s; large {heavy_s} s")
        save()


async def run(args: argparse.Namespace, procs: dict[str, ServiceProcess]) -> dict[str, Any]:
    settings = Settings()
    tenant = "bench"
    docs = load_docs(1 if args.large_only else args.backfill + 2 * args.probes)
    backfill = docs[: args.backfill]
    idle_docs = docs[args.backfill : args.backfill + args.probes]
    edit_docs = docs[args.backfill + args.probes :]
    lane: Lane = INTERACTIVE if args.baseline else BULK
    report: dict[str, Any] = {
        "mode": "baseline (no lanes: backfill in the interactive lane, no heavy offload)"
        if args.baseline
        else "lanes",
        "machine": f"{os.cpu_count()} cores",
        "quick": args.quick,
    }
    async with (
        EventPublisher(settings, service="bench") as pub,
        await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn,
    ):
        clock = Clock(conn)

        def save() -> None:  # a partial report after every phase (a long run may be cut)
            (OUT / f"{args.stem}.json").write_text(json.dumps(report, indent=2))

        # warm-up: the first document through each lane loads models and opens pools
        for lane_ in (INTERACTIVE, BULK):
            await timed(pub, clock, with_lane(upsert("warmup", docs[0], suffix=lane_), lane_))
        if not args.large_only:
            report["idle"] = await idle_phase(pub, clock, tenant, idle_docs)
            save()
            report["under_backfill"] = await backfill_phase(
                pub,
                clock,
                tenant,
                backfill,
                edit_docs,
                lane=lane,
                timeout_s=args.timeout,
                edits_on=not args.no_edits,
                profiler=StageProfiler(settings, procs) if args.profile else None,
            )
            save()
            plot(report, OUT / f"{args.stem}.png")
        if not args.skip_large:
            report["large_documents"] = {}
            await large_phase(
                pub,
                clock,
                procs,
                quick=args.quick,
                timeout_s=args.large_timeout,
                save=save,
                out=report["large_documents"],
                only=tuple(args.large),
            )
    return report


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bf = report["under_backfill"]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    xs = [a for a, _ in bf["edits"]]
    ys = [b for _, b in bf["edits"]]
    ax.plot(xs, ys, "o-", ms=3, label="interactive edit: publish -> indexed")
    ax.axhline(2.0, color="grey", ls=":", lw=1, label="target p95 2 s")
    ax.set_xlabel(f"seconds since the {bf['docs']}-document {bf['backfill_lane']} backfill began")
    ax.set_ylabel("freshness (s)")
    ax.set_yscale("log")
    ax2 = ax.twinx()
    ax2.plot([a for a, _ in bf["progress"]], [n for _, n in bf["progress"]], color="tab:orange")
    ax2.set_ylabel("backfill documents indexed", color="tab:orange")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"ragline freshness under backfill ({report['mode'].split(' ')[0]})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def start_services(base: Path, tries: int = 3) -> dict[str, ServiceProcess]:
    """Every consumer service as its own process. On a shared machine a "free" port can
    be taken before the service binds it (another process then answers /metrics): a
    service found dead after start-up is started again on new ports."""
    names = [n for n in SERVICES if n not in HTTP_SERVICES]
    procs: dict[str, ServiceProcess] = {}
    for attempt in range(tries):
        for name in names:
            if name in procs and procs[name].running():
                continue
            procs[name] = ServiceProcess(
                name,
                env=dict(os.environ),
                log_path=base / f"{name}-{attempt}.log",
                metrics_port=free_port(),
                http_port=free_port(),
                cwd=REPO,
            )
        for p in procs.values():
            try:
                p.wait_metrics(timeout_s=300)
            except RuntimeError as exc:
                print(f"{p.name} did not start ({str(exc)[:200]}); retrying", file=sys.stderr)
        time.sleep(3)
        if all(p.running() for p in procs.values()):
            return procs
    raise RuntimeError(f"services not running: {[n for n, p in procs.items() if not p.running()]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backfill", type=int, default=5000)
    ap.add_argument("--probes", type=int, default=15)
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--baseline", action="store_true", help="reproduce the code before lanes")
    ap.add_argument("--skip-large", action="store_true", help="no large-document phase")
    ap.add_argument(
        "--no-edits",
        action="store_true",
        help="throughput only: no interactive edits during the backfill (compare modes)",
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="sample each stage's phases (handle/produce/commit/gate/idle) and lag during "
        "the backfill (bench/_stage_profile.py)",
    )
    ap.add_argument(
        "--label", default="", help="a suffix of the report's file name (side-by-side runs)"
    )
    ap.add_argument(
        "--large-only", action="store_true", help="only the large-document phase (no backfill)"
    )
    ap.add_argument(
        "--large-timeout", type=float, default=900, help="seconds to wait per large document"
    )
    ap.add_argument(
        "--large",
        action="append",
        default=[],
        choices=sorted(large_inputs(True)),
        help="only this large input (repeatable; default: every one)",
    )
    add_quick(ap)  # here also: large inputs at a tenth of their size, one of them
    args = ap.parse_args()
    scifact(quick=args.quick)  # or say where to get it (--quick: a skip)
    if args.quick:
        args.backfill, args.probes = min(args.backfill, 30), min(args.probes, 3)
        args.large = args.large or ["csv_20k_columns"]
    OUT.mkdir(parents=True, exist_ok=True)
    stem = "freshness_baseline" if args.baseline else "freshness"
    stem = args.stem = (
        stem
        + ("_noedits" if args.no_edits else "")
        + ("_large" if args.large_only else "")
        + ("_quick" if args.quick else "")
        + "".join(f"_{n}" for n in args.large)
        + (f"_{args.label}" if args.label else "")
    )
    base = Path(tempfile.mkdtemp(prefix="ragline-bench-"))
    env = stack_env(base / "state")
    if args.baseline:
        env.update(
            {
                "RAGLINE_CONNECTOR_HEAVY_BYTES": "0",
                "RAGLINE_PARSER_HEAVY_BYTES": "0",
                # no tenant budget either: the interactive backfill stays interactive
                "RAGLINE_CONNECTOR_TENANT_INTERACTIVE_RATE": "0",
                # nor the chunker's heaviness rule, nor the memory release
                "RAGLINE_RELEASE_MEMORY_BYTES": "0",
                **{
                    f"RAGLINE_CHUNKER_HEAVY_{k}": "0"
                    for k in ("CHARS", "BLOCKS", "LINES", "CELLS", "CHILDREN")
                },
            }
        )
    with patched_environ(env):
        os.environ.setdefault("RAGLINE_QUERY_JWT_SECRET", "bench-only-secret")
        manager = StackManager(Settings(), StackSettings(), detached=False)
        asyncio.run(manager.up())
        procs: dict[str, ServiceProcess] = {}
        try:
            procs = start_services(base)
            report = asyncio.run(run(args, procs))
        finally:
            stop_all(procs.values())
            asyncio.run(manager.down())
    (OUT / f"{stem}.json").write_text(json.dumps(report, indent=2))
    summary = {k: v for k, v in report.items() if k != "under_backfill"}
    if not args.large_only:
        plot(report, OUT / f"{stem}.png")
        summary["under_backfill"] = {
            k: v for k, v in report["under_backfill"].items() if k not in ("edits", "progress")
        }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
