"""The broker goes away mid-ingest and comes back (issue 29): a private single-node
Apache Kafka (its own state dir, the session's Postgres and OpenSearch), every consumer
service as its own process on it, one corpus ingested fault-free (tenant A), then the
same corpus again (tenant B) with the broker SIGKILLed while it is being processed and
restarted on its kept log dir. Every document of B reaches its terminal status, B's
stores equal A's (0 lost, 0 duplicated), no service was restarted (each reconnects by
itself), ``ragline lag`` says "broker unreachable" meanwhile, and the webhook answers
503 with Retry-After (never 202, never 500) until the broker is back.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from chaos.chaos_helpers import (
    Fleet,
    compare,
    corpus,
    publish_all,
    settle,
    snapshot,
    terminal_count,
    upserts,
    webhook_post,
)

from ragline.config import Settings
from ragline.errors import BackendUnavailable
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.kafka import LocalKafka
from ragline.platform.stack.settings import Component
from ragline.platform.stack.testing import ServiceProcess, free_port, unique_tenant
from ragline.runtime.lag import stage_lag
from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics
from ragline.store.os_client import make_client

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="session")]

N_DOCS = int(os.environ.get("RAGLINE_BROKER_FAULT_DOCS", "10"))
WEBHOOK_SECRET = "broker-fault-webhook-secret"


async def readyz_within(proc: ServiceProcess, reason: str, timeout_s: float) -> bool:
    """Whether the service's /readyz answers 503 with ``reason`` within ``timeout_s``."""
    url = proc.metrics_url.replace("/metrics", "/readyz")
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(timeout=5) as client:
        while time.monotonic() < deadline:
            r = await client.get(url)
            if r.status_code == 503 and r.text == reason:
                return True
            await asyncio.sleep(0.5)
    return False


@pytest_asyncio.fixture(loop_scope="session")
async def private_kafka(
    stack: Settings, tmp_path: Path
) -> AsyncIterator[tuple[Settings, LocalKafka]]:
    """A Kafka of this test's own (the session's stays untouched), with the topics."""
    settings = stack.model_copy(update={"kafka_bootstrap": f"127.0.0.1:{free_port()}"})
    # its own state dir (for the broker only: Postgres stays the session's)
    own = settings.model_copy(update={"state_dir": tmp_path / "kafka-state"})
    manager = StackManager(
        own, StackSettings(components=frozenset({Component.KAFKA})), detached=False
    )
    kafka = manager.servers[Component.KAFKA]
    assert isinstance(kafka, LocalKafka)
    await kafka.start()
    try:
        await ensure_pipeline_topics(
            settings, partitions=2, topic_settings=TopicSettings(), timeout_s=60
        )
        yield settings, kafka
    finally:
        await kafka.stop()


async def test_broker_sigkill_mid_ingest_loses_and_doubles_nothing(
    private_kafka: tuple[Settings, LocalKafka], tmp_path: Path
) -> None:
    settings, kafka = private_kafka
    docs = corpus(N_DOCS)
    env = {
        **os.environ,
        "RAGLINE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "RAGLINE_EMBEDDER_CACHE": "false",  # B's vectors are computed, not looked up
        "RAGLINE_CONNECTOR_WEBHOOK_SECRET": WEBHOOK_SECRET,
        # the webhook's 503 after 2 s of no acknowledgement, not the deployed 10 s: the
        # same answer (the producer would wait 40 s), 8 s sooner
        "RAGLINE_CONNECTOR_WEBHOOK_PUBLISH_TIMEOUT_S": "2",
    }
    fleet = Fleet(logs=tmp_path / "fleet", env=env, replicas=1)
    fleet.start_all()
    os_client = make_client(settings)
    deadline = time.monotonic() + 900
    try:
        await fleet.wait_up()
        started = fleet.starts
        base = unique_tenant("base")
        await publish_all(settings, upserts(base, docs))
        await settle(settings, fleet, base, len(docs), deadline, revive=False)

        tenant = unique_tenant("kill")
        await publish_all(settings, upserts(tenant, docs))
        await asyncio.sleep(1.0)  # the stages are at work on tenant's documents
        killed = kafka.nodes[0].kill()
        assert killed is not None
        await asyncio.sleep(0.5)

        # while it is away: lag and the stages' readiness say so, the webhook refuses
        # with Retry-After
        with pytest.raises(BackendUnavailable, match="broker unreachable"):
            await stage_lag(settings, ["indexer"])
        indexer = fleet.procs[("indexer", 0)]
        assert await readyz_within(indexer, "broker unreachable", 20.0)
        connector = fleet.procs[("connector", 0)]
        hook = unique_tenant("hook")
        late = upserts(hook, docs[:1])[0]
        away = await webhook_post(connector.http_url, WEBHOOK_SECRET, late)
        assert away.status_code == 503, away.text
        assert int(away.headers["Retry-After"]) >= 1
        await asyncio.sleep(4.0)

        await kafka.start()  # the same log dir: topics, records and offsets are kept
        back = await webhook_post(connector.http_url, WEBHOOK_SECRET, late, retry_s=120)
        assert back.status_code == 202, back.text

        await settle(settings, fleet, tenant, len(docs), deadline, revive=False)
        await settle(settings, fleet, hook, 1, deadline, revive=False)
        # no service was restarted: each reconnected by itself
        assert fleet.starts == started
        dead = [k for k, p in fleet.procs.items() if not p.running()]
        assert not dead, f"exited: {dead}\n{fleet.log_tail()}"

        assert await terminal_count(settings, hook) == 1
        got = await snapshot(settings, os_client, tenant)
        want = await snapshot(settings, os_client, base)
        figures = compare(want, got)
        assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
        assert not figures["differing_documents"] and not figures["differing_chunks"], figures
        assert not figures["differing_os"] and not figures["vector_mismatch"], figures
        assert not figures["status_not_indexed"], figures
        assert figures["documents"] == len(docs)
    finally:
        fleet.stop()
        await os_client.close()
