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

import pytest
from chaos_helpers import (
    Fleet,
    Monkey,
    assert_same_stores,
    compare,
    corpus,
    dead_letters,
    publish_all,
    settle,
    snapshot,
    terminal_count,
    upserts,
)
from opensearchpy import AsyncOpenSearch

from ragline.config import Settings
from ragline.events import Topics
from ragline.platform.stack.testing import unique_tenant
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
            await settle(stack, fleet, base_tenant, N_DOCS, deadline)
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
            await settle(stack, fleet, chaos_tenant, N_DOCS, deadline)
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
    assert_same_stores(figures, report)
    assert figures["chaos_dead_letters"] == 0, report
