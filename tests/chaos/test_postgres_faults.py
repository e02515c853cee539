"""Postgres faults during ingest and queries (issue 29): a private embedded Postgres (the
session's Kafka and OpenSearch), every consumer service and the query service as their
own processes. One corpus is ingested fault-free (the reference); then the same corpus
for another tenant while a client keeps querying, with first a fast shutdown (SIGINT)
and then a SIGKILL of every Postgres process, each followed by a restart on the kept
data directory. The query API may answer 200 or 503 with ``Retry-After``, never a 500;
The stores must equal the
reference: 0 lost, 0 duplicated, every document indexed.

A stage whose retries run out while Postgres is away stops without committing (ADR
0004, fail-stop) and is started again here as its supervisor would; the figures say how
many did. Not part of ``make test``: ``make chaos`` (``RAGLINE_PG_CHAOS_DOCS``, 30).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import pytest_asyncio
from chaos_helpers import REPO_ROOT, Fleet, compare, corpus, publish_all, settle, snapshot, upserts

from ragline.auth import Principal, mint_token
from ragline.config import Settings
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.postgres import EmbeddedPostgres
from ragline.platform.stack.settings import Component
from ragline.platform.stack.testing import ServiceProcess, free_port, unique_tenant
from ragline.store.os_client import make_client

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.skipif(not os.environ.get("RAGLINE_CHAOS"), reason="long: run by `make chaos`"),
]

N_DOCS = int(os.environ.get("RAGLINE_PG_CHAOS_DOCS", "30"))
# drained and nothing more indexed for this long after the faults: the rest is lost
QUIET_S = float(os.environ.get("RAGLINE_CHAOS_QUIET_S", "60"))


@pytest_asyncio.fixture(loop_scope="session")
async def private_pg(stack: Settings, tmp_path: Path) -> AsyncIterator[tuple[Settings, Any]]:
    settings = stack.model_copy(update={"state_dir": tmp_path / "pg-state"})
    manager = StackManager(
        settings, StackSettings(components=frozenset({Component.POSTGRES})), detached=False
    )
    await manager.up()  # database, query role, migrations (topics exist already)
    try:
        yield settings, manager.servers[Component.POSTGRES]
    finally:
        await manager.down()


def kill_postgres(server: EmbeddedPostgres) -> int:
    """SIGKILL the postmaster and every backend at once (a lost pod, an OOM kill)."""
    pid = server.pid()
    assert pid is not None
    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.send_signal(signal.SIGKILL)
    return len(procs)


async def query_loop(url: str, token: str, stop: asyncio.Event, seen: Counter[str]) -> list[str]:
    """Query until stopped; returns every answer that breaks the contract."""
    bad: list[str] = []
    headers = {"Authorization": f"Bearer {token}"}
    body = {"query": "cells protein expression", "top_k": 5, "mode": "hybrid"}
    async with httpx.AsyncClient(timeout=30) as client:
        while not stop.is_set():
            try:
                r = await client.post(f"{url}/v1/search", json=body, headers=headers)
            except httpx.HTTPError as exc:
                seen[type(exc).__name__] += 1
                await asyncio.sleep(0.2)
                continue
            seen[str(r.status_code)] += 1
            if r.status_code == 503 and "Retry-After" not in r.headers:
                bad.append("503 without Retry-After")
            elif r.status_code not in (200, 503):
                bad.append(f"{r.status_code}: {r.text[:200]}")
            await asyncio.sleep(0.2)
    return bad


async def test_postgres_restarts_lose_and_double_nothing(
    private_pg: tuple[Settings, EmbeddedPostgres], tmp_path: Path
) -> None:
    settings, pg = private_pg
    docs = corpus(N_DOCS)
    secret = secrets.token_urlsafe(32)
    env = {
        **os.environ,
        "RAGLINE_STATE_DIR": str(settings.state_dir),  # the private Postgres' socket
        "RAGLINE_EMBEDDER_CACHE": "false",
        "RAGLINE_QUERY_JWT_SECRET": secret,
        "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
    }
    fleet = Fleet(logs=tmp_path / "fleet", env=env, replicas=1)
    fleet.start_all()
    query = ServiceProcess(
        "query",
        env=env,
        log_path=tmp_path / "fleet" / "query.log",
        metrics_port=free_port(),
        http_port=free_port(),
        cwd=REPO_ROOT,
    )
    client = make_client(settings)
    deadline = time.monotonic() + 1800
    figures: dict[str, Any] = {"docs": N_DOCS}
    try:
        await fleet.wait_up()
        await query.wait_ready_async()
        base = unique_tenant("base")
        await publish_all(settings, upserts(base, docs))
        await settle(settings, fleet, base, N_DOCS, deadline)
        started = fleet.starts

        tenant = unique_tenant("pg")
        token = mint_token(Principal(tenant=tenant, groups=("chaos",), subject="t"), secret)
        stop = asyncio.Event()
        seen: Counter[str] = Counter()
        queries = asyncio.create_task(query_loop(query.http_url, token, stop, seen))
        await publish_all(settings, upserts(tenant, docs))
        await asyncio.sleep(1.0)
        await pg.stop()  # fast shutdown (SIGINT)
        await asyncio.sleep(4.0)
        await pg.start()
        await asyncio.sleep(3.0)
        figures["sigkilled_processes"] = kill_postgres(pg)
        await asyncio.sleep(4.0)
        await pg.start()  # crash recovery on the kept data directory
        await settle(settings, fleet, tenant, N_DOCS, deadline, quiet_s=QUIET_S)
        await asyncio.sleep(2.0)  # queries after the recovery too
        stop.set()
        bad = await queries
        figures["query_answers"] = dict(seen)
        figures["services_restarted"] = fleet.starts - started
        assert not bad, bad[:10]
        assert seen["200"] > 0 and query.running()
        got = await snapshot(settings, client, tenant)
        want = await snapshot(settings, client, base)
        result = compare(want, got)
        figures.update({k: result[k] for k in ("lost", "duplicated", "documents", "chunks")})
        assert result["lost"] == 0 and result["duplicated"] == 0, result
        assert not result["differing_documents"] and not result["differing_chunks"], result
        assert not result["differing_os"] and not result["status_not_indexed"], result
    finally:
        print(json.dumps({"postgres_chaos": figures}))
        query.cleanup()
        fleet.stop()
        await client.close()
