"""CPU per document of one service draining a backlog on a real broker (issue 35).

``stage_cpu.py`` measures a stage's own work in process; this measures the service as
it runs: ``ragline run <stage>`` as its own process on a private stack (Kafka,
PostgreSQL, OpenSearch), consuming a backlog of SciFact documents already on its input
topic, publishing and committing through the runtime and aiokafka. A service's CPU
(``/proc``: user + system, its worker processes too) is read when it is ready and idle
and again when its consumer group has committed the whole backlog; its idle CPU over
the same seconds (measured right before) is subtracted. Every stage that takes a
document (connector, parser, scanner, chunker, enricher, indexer) gets its own input:
the events the stages before it emit for the same documents, made in process (the
indexer's ``doc.embedded`` carries deterministic pseudo vectors: its work does not
depend on their values).

``--variant NAME=PYTHONPATH`` (repeatable): the services run with that ``PYTHONPATH``
(another worktree's code), alternating variants round by round on the same stack, each
round on fresh document ids, so the comparison shares one machine state.

    .venv/bin/python bench/stage_drain.py [--docs 300] [--rounds 2] [--stages chunker,enricher]
        [--variant main=/work/main/libs:/work/main --variant this=libs:.] [--spy DIR]

``--spy DIR``: a py-spy profile (``--gil``: the thread holding the GIL, i.e. Python
CPU) of each drain, raw stacks in ``DIR/<stage>-<variant>-<round>.txt`` (py-spy from
``PATH`` or ``PY_SPY``; none: no profile).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _paths import SCIFACT_CORPUS, add_quick
from _paths import scifact as require_scifact
from _services import service
from pipeline_bench import cpu_seconds, wait_consuming

from ragline.config import Settings
from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.stage import EmbedderStage
from ragline.events import DocFetched, DocumentMeta, EventBase, SourceUpsert, Topics
from ragline.hashing import sha256_hex
from ragline.indexing.samples import PseudoEmbedder
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.testing import ServiceProcess, patched_environ, stack_env, stop_all
from ragline.runtime.lag import wait_drained
from ragline.runtime.publisher import EventPublisher
from ragline.runtime.stage import Stage, StageContext

sys.path.insert(0, str(Path(__file__).parent))
from stage_cpu import make_stages

STAGES = ("connector", "parser", "scanner", "chunker", "enricher", "indexer")
INPUT = {
    "connector": Topics.SOURCE_CHANGES,
    "parser": Topics.DOC_FETCHED,
    "scanner": Topics.DOC_PARSED,
    "chunker": Topics.DOC_SCANNED,
    "enricher": Topics.DOC_CHUNKED,
    "indexer": Topics.DOC_EMBEDDED,
}


def corpus(n: int) -> list[dict[str, Any]]:
    out = []
    with SCIFACT_CORPUS.open(encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if len(out) >= n:
                break
    return out


async def inputs(
    docs: Sequence[dict[str, Any]], tag: str, stages: dict[str, Stage[Any, Any]], ctx: StageContext
) -> dict[str, list[EventBase]]:
    """Per service, its input events for ``docs`` (ids suffixed with ``tag``)."""
    out: dict[str, list[EventBase]] = {s: [] for s in STAGES}
    for d in docs:
        text = f"{d['title']}\n\n{d['text']}"
        meta = DocumentMeta(
            title=d["title"], mime_type="text/plain", acl_groups=("all",), source_type="bench"
        )
        doc_id = f"scifact:{d['_id']}-{tag}"
        out["connector"].append(
            SourceUpsert(
                tenant_id="bench", document_id=doc_id, source_seq=1, meta=meta, content_text=text
            )
        )
        data = text.encode()
        ev: EventBase = DocFetched(
            tenant_id="bench",
            document_id=doc_id,
            source_seq=1,
            content_hash=sha256_hex(data),
            meta=meta,
            content_b64=base64.b64encode(data).decode(),
            size_bytes=len(data),
        )
        out["parser"].append(ev)
        for name, nxt in (
            ("parser", "scanner"),
            ("scanner", "chunker"),
            ("chunker", "enricher"),
            ("enricher", "embedder"),
            ("embedder", "indexer"),
        ):
            (o,) = await stages[name].handle(ev, ctx)
            ev = o.event
            if nxt in out:
                out[nxt].append(ev)
    return out


def spy(pid: int, path: Path) -> subprocess.Popen[bytes] | None:
    exe = shutil.which("py-spy") or os.environ.get("PY_SPY", "py-spy")
    if not Path(exe).exists():
        return None
    return subprocess.Popen(
        [
            exe,
            "record",
            "--pid",
            str(pid),
            "--gil",
            "--nonblocking",
            "--subprocesses",
            "--rate",
            "200",
            "--format",
            "raw",
            "-o",
            str(path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def quiet(pid: int, limit_s: float = 60.0) -> float:
    """Wait until the service is idle (start-up work done: a worker pool's imports);
    its idle CPU seconds per second."""
    deadline = time.monotonic() + limit_s
    while True:
        c0, t0 = cpu_seconds(pid), time.perf_counter()
        await asyncio.sleep(2.0)
        rate = (cpu_seconds(pid) - c0) / (time.perf_counter() - t0)
        if rate < 0.03 or time.monotonic() > deadline:
            return rate


async def drain(
    settings: Settings,
    name: str,
    events: Sequence[EventBase],
    env_path: str,
    base: Path,
    spy_to: Path | None,
) -> dict[str, float]:
    os.environ["PYTHONPATH"] = env_path
    proc = service(name, base, log_name=f"{name}-{len(os.listdir(base))}")
    procs: list[ServiceProcess] = [proc]
    try:
        proc.wait_metrics(timeout_s=300)
        wait_consuming(proc)
        idle_rate = await quiet(proc.pid)
        profiler = spy(proc.pid, spy_to) if spy_to else None
        cpu0, t1 = cpu_seconds(proc.pid), time.perf_counter()
        async with EventPublisher(settings, service="bench") as pub:
            for ev in events:
                await pub.publish(INPUT[name], ev)
        lags = await wait_drained(settings, [name], timeout_s=600, poll_s=0.25)
        wall = time.perf_counter() - t1
        cpu = cpu_seconds(proc.pid) - cpu0
        if profiler is not None:
            profiler.send_signal(2)
            profiler.wait(timeout=30)
        if sum(x.total for x in lags):
            raise RuntimeError(f"{name} did not drain: {lags}")
        return {
            "cpu_ms_per_doc": 1000 * (cpu - idle_rate * wall) / len(events),
            "raw_cpu_ms_per_doc": 1000 * cpu / len(events),
            "idle_cpu_per_s": idle_rate,
            "wall_s": wall,
        }
    finally:
        stop_all(procs)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = Settings()
    ctx = StageContext(settings=settings, logger=logging.getLogger("bench.stage_drain"))
    stages = make_stages(settings, in_thread=True)
    stages["embedder"] = EmbedderStage(
        settings, EmbedderSettings(cache=False), embedder=PseudoEmbedder()
    )
    for s in stages.values():
        await s.start()
    docs = corpus(args.docs)
    variants = args.variant or [f"this={os.environ.get('PYTHONPATH', '')}"]
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    base = Path(tempfile.mkdtemp(prefix="ragline-drain-"))
    try:
        for r in range(args.rounds):
            order = variants if r % 2 == 0 else variants[::-1]
            for v in order:
                label, _, path = v.partition("=")
                made = await inputs(docs, f"{label}{r}", stages, ctx)
                for name in args.stages.split(","):
                    spy_to = args.spy / f"{name}-{label}-{r}.txt" if args.spy else None
                    res = await drain(settings, name, made[name], path, base, spy_to)
                    res["at"] = time.strftime("%H:%M:%S", time.gmtime())
                    res["load1"] = os.getloadavg()[0]
                    results.setdefault(name, {}).setdefault(label, []).append(res)
                    print(
                        f"round {r + 1} {name:9s} {label:6s} {res['cpu_ms_per_doc']:6.2f}"
                        f" CPU-ms/doc (raw {res['raw_cpu_ms_per_doc']:.2f},"
                        f" idle {res['idle_cpu_per_s']:.3f}/s, {res['wall_s']:.1f} s,"
                        f" load {res['load1']:.1f})",
                        flush=True,
                    )
    finally:
        for s in stages.values():
            await s.stop()
    return {"docs": len(docs), "results": results}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--variant", action="append", help="NAME=PYTHONPATH of the services")
    ap.add_argument("--spy", type=Path, help="py-spy profiles of each drain into DIR")
    ap.add_argument("--json", type=Path)
    add_quick(ap)
    args = ap.parse_args()
    require_scifact(quick=args.quick)
    if args.quick:
        args.docs, args.rounds = 20, 1
    if args.spy:
        args.spy.mkdir(parents=True, exist_ok=True)
    state = Path(tempfile.mkdtemp(prefix="ragline-drain-stack-"))
    with patched_environ(stack_env(state / "state")):
        settings = Settings()
        manager = StackManager(settings, StackSettings(), detached=False)
        asyncio.run(manager.up())
        try:
            report = asyncio.run(run(args))
        finally:
            asyncio.run(manager.down())
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
