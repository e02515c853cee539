"""CPU per document of the stages beside the embedder, in process (issue 35).

SciFact abstracts go parser -> scanner -> chunker -> enricher through the real stages
(the services' default settings), and every hop also does the runtime's own work on
the message as ``runtime/consumer.py`` does it: ``read_event`` of the consumed bytes
(validation, the seal check), ``handle_batch``, then the output's lane, its trace
context, the publisher's seal check and its JSON body. No broker: the Kafka client's
own CPU is not in these numbers. CPU is the process's user + system time (every
thread, and the parser's worker processes).

    .venv/bin/python bench/stage_cpu.py [--docs 300] [--rounds 3] [--profile STAGE]

``--profile parser|scanner|chunker|enricher`` prints the cProfile of that stage's hops
(its blocking work run on the calling thread so the profiler sees it).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import json
import logging
import pstats
import time
from collections.abc import Callable, Sequence
from typing import Any

import psutil
from _paths import SCIFACT_CORPUS, add_quick
from _paths import scifact as require_scifact

from ragline.chunking.config import ChunkerSettings
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.enrichment.settings import EnricherSettings
from ragline.enrichment.stage import EnricherStage
from ragline.events import (
    DocFetched,
    DocumentMeta,
    EventBase,
    read_event,
    seal_problem,
)
from ragline.hashing import sha256_hex
from ragline.parsing.settings import ParserSettings
from ragline.parsing.stage import ParserStage
from ragline.runtime.lanes import demote
from ragline.runtime.stage import Stage, StageContext
from ragline.scanning.settings import ScannerSettings
from ragline.scanning.stage import ScannerStage
from ragline.tracing import current_traceparent

STAGES = ("parser", "scanner", "chunker", "enricher")
NEXT_TOPIC = {"parser": "doc.parsed", "scanner": "doc.scanned", "chunker": "doc.chunked"}
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def fetched(limit: int) -> list[DocFetched]:
    """SciFact abstracts as the connector emits them (``pipeline_bench.upsert``'s text)."""
    out = []
    with SCIFACT_CORPUS.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            data = f"{d['title']}\n\n{d['text']}".encode()
            out.append(
                DocFetched(
                    tenant_id="bench",
                    document_id=f"scifact:{d['_id']}",
                    source_seq=1,
                    traceparent=TRACE,
                    content_hash=sha256_hex(data),
                    meta=DocumentMeta(
                        title=d["title"],
                        mime_type="text/plain",
                        acl_groups=("all",),
                        source_type="bench",
                    ),
                    content_b64=base64.b64encode(data).decode(),
                    size_bytes=len(data),
                )
            )
            if len(out) >= limit:
                break
    return out


def children_cpu_s() -> float:
    """User + system seconds of this process's live children (the parser's workers)."""
    total = 0.0
    for p in psutil.Process().children(recursive=True):
        t = p.cpu_times()
        total += t.user + t.system
    return total


def cpu_s(name: str) -> float:
    """This process's CPU seconds (every thread), the parser's workers' too."""
    return time.process_time() + (children_cpu_s() if name == "parser" else 0.0)


def topic_of(event: EventBase) -> str:
    return event.event_type  # the logical topic of every pipeline event is its type


async def hop(stage: Stage[Any, Any], body: bytes, topic: str, ctx: StageContext) -> list[bytes]:
    """One message through ``stage`` as the runtime handles it; the output bodies."""
    event = read_event(topic, body)
    (result,) = await stage.handle_batch([event], ctx)
    if isinstance(result, BaseException):
        raise result
    bodies = []
    for out in result:
        ev = demote(out.event, event.priority, out.topic).model_copy(
            update={"traceparent": current_traceparent(event.traceparent)}
        )
        if seal_problem(ev) is not None:
            raise AssertionError("unsealed output")
        bodies.append(ev.model_dump_json().encode())
    return bodies


def make_stages(settings: Settings, *, in_thread: bool) -> dict[str, Stage[Any, Any]]:
    return {
        "parser": ParserStage(settings, ParserSettings(workers=0 if in_thread else 1)),
        "scanner": ScannerStage(settings, ScannerSettings()),
        "chunker": ChunkerStage(settings, ChunkerSettings()),
        "enricher": EnricherStage(settings, ChunkerSettings(), EnricherSettings()),
    }


async def run(
    docs: Sequence[DocFetched],
    stages: dict[str, Stage[Any, Any]],
    ctx: StageContext,
    profile: str | None = None,
) -> tuple[dict[str, float], dict[str, float], int]:
    """CPU seconds and bytes consumed per stage over ``docs``; child chunks."""
    cpu = dict.fromkeys(STAGES, 0.0)
    size = dict.fromkeys(STAGES, 0.0)
    children = 0
    prof = cProfile.Profile()
    for doc in docs:
        bodies = [doc.model_dump_json().encode()]
        topic = "doc.fetched"
        for name in STAGES:
            nxt: list[bytes] = []
            for body in bodies:
                size[name] += len(body)
                t = cpu_s(name)
                if name == profile:
                    prof.enable()
                nxt += await hop(stages[name], body, topic, ctx)
                if name == profile:
                    prof.disable()
                cpu[name] += cpu_s(name) - t
            bodies = nxt
            topic = NEXT_TOPIC.get(name, "")
        for body in bodies:
            children += sum(1 for c in json.loads(body)["chunks"] if c["level"] == "child")
    if profile:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    return cpu, size, children


def _inline_threads() -> None:
    """``asyncio.to_thread`` on the calling thread, so cProfile sees the work."""

    async def to_thread(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    asyncio.to_thread = to_thread  # type: ignore[assignment]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", choices=STAGES)
    ap.add_argument("--inline", action="store_true", help="blocking work on the loop's thread")
    add_quick(ap)
    args = ap.parse_args()
    require_scifact()
    if args.quick:
        args.docs, args.rounds = 20, 1
    if args.profile or args.inline:
        _inline_threads()
    logging.basicConfig(level=logging.WARNING)
    settings = Settings()
    ctx = StageContext(settings=settings, logger=logging.getLogger("bench.stage_cpu"))
    docs = fetched(args.docs)
    stages = make_stages(settings, in_thread=bool(args.profile or args.inline))
    for s in stages.values():
        await s.start()
    try:
        await run(docs[:20], stages, ctx)  # warm: lazy imports, first-call caches
        for r in range(args.rounds):
            t0 = time.perf_counter()
            cpu, size, children = await run(
                docs, stages, ctx, args.profile if r == args.rounds - 1 else None
            )
            wall = time.perf_counter() - t0
            print(
                f"round {r + 1}: {len(docs)} docs, {children} child chunks, {wall:.1f} s wall; "
                "CPU ms per document: "
                + ", ".join(f"{n} {1000 * cpu[n] / len(docs):.2f}" for n in STAGES)
                + "; KB in per doc: "
                + ", ".join(f"{n} {size[n] / len(docs) / 1024:.1f}" for n in STAGES)
            )
    finally:
        for s in stages.values():
            await s.stop()


if __name__ == "__main__":
    asyncio.run(main())
