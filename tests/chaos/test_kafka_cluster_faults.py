"""Broker faults on a three-node Apache Kafka cluster (issue 29): replication factor 3,
``min.insync.replicas`` 2, every consumer service as its own process. One corpus is
ingested fault-free (the reference), then once per fault, during ingest:

- ``leader``: SIGKILL the leader of ``source.changes`` partition 0, restart it later;
  while it is away, SIGKILL and restart the embedder and indexer (a rebalance on top
  of the fail-over);
- ``controller``: SIGKILL the active KRaft controller (the quorum leader), restart it;
- ``rolling``: a rolling restart of all three nodes (SIGTERM, start, wait for three).

Each run's stores must equal the reference: 0 lost, 0 duplicated, every document
indexed (checked once all three ran, so a failing run shows every fault's figures).
A rebalance storm on top: two replicas of every consumer service, random replicas
SIGKILLed and started again (``chaos_helpers.Monkey``) while brokers are SIGKILLed and
restarted one after the other (the leader of a ``source.changes`` partition, then the
active controller, then any node): the same stores, 0 lost, 0 duplicated.

Not part of ``make test`` (minutes): ``make chaos`` (``RAGLINE_KAFKA_CHAOS_DOCS``,
default 60; ``RAGLINE_STORM_DOCS``, default 120; ``RAGLINE_CHAOS_SEED``).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
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

from ragline.config import Settings
from ragline.events import Topics
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.kafka import KafkaNode, LocalKafka
from ragline.platform.stack.settings import Component
from ragline.platform.stack.testing import free_port, unique_tenant
from ragline.runtime.kafka_security import aiokafka_options
from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics
from ragline.runtime.topology import physical_topic
from ragline.store.os_client import make_client

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.skipif(not os.environ.get("RAGLINE_CHAOS"), reason="long: run by `make chaos`"),
]

N_DOCS = int(os.environ.get("RAGLINE_KAFKA_CHAOS_DOCS", "60"))
TIMEOUT_S = float(os.environ.get("RAGLINE_CHAOS_TIMEOUT_S", "3600"))
# drained and nothing more indexed for this long after a fault: the rest is lost
QUIET_S = float(os.environ.get("RAGLINE_CHAOS_QUIET_S", "60"))
STORM_DOCS = int(os.environ.get("RAGLINE_STORM_DOCS", "120"))
SEED = int(os.environ.get("RAGLINE_CHAOS_SEED", str(random.SystemRandom().randrange(10**6))))


@pytest_asyncio.fixture(loop_scope="session")
async def cluster(stack: Settings, tmp_path: Path) -> AsyncIterator[tuple[Settings, LocalKafka]]:
    bootstrap = ",".join(f"127.0.0.1:{free_port()}" for _ in range(3))
    settings = stack.model_copy(update={"kafka_bootstrap": bootstrap})
    # its own state dir (for the brokers only: Postgres stays the session's)
    own = settings.model_copy(update={"state_dir": tmp_path / "kafka3"})
    stack_settings = StackSettings(components=frozenset({Component.KAFKA}), kafka_brokers=3)
    kafka = StackManager(own, stack_settings, detached=False).servers[Component.KAFKA]
    assert isinstance(kafka, LocalKafka)
    await kafka.start()
    try:
        report = await ensure_pipeline_topics(
            settings, partitions=2, topic_settings=TopicSettings(), timeout_s=60
        )
        assert report.replication_factor == 3
        yield settings, kafka
    finally:
        await kafka.stop()


async def partition_leader(settings: Settings, topic: str, partition: int) -> int:
    from aiokafka.admin import AIOKafkaAdminClient

    client = AIOKafkaAdminClient(
        bootstrap_servers=settings.kafka_bootstrap, **aiokafka_options(settings)
    )
    await client.start()
    try:
        [described] = await client.describe_topics([topic])
    finally:
        await client.close()
    by_id = {p["partition"]: p for p in described["partitions"]}
    return int(by_id[partition]["leader"])


def active_controller(kafka: LocalKafka) -> int:
    """The KRaft quorum leader, as the live nodes' quorum-state files record it."""
    for node in kafka.nodes:
        state = node.home / "data" / "__cluster_metadata-0" / "quorum-state"
        if node.pid() is not None and state.is_file():
            leader = int(json.loads(state.read_text()).get("leaderId", -1))
            if leader > 0:
                return leader
    raise AssertionError("no quorum leader recorded")


async def restart(kafka: LocalKafka, node: KafkaNode) -> None:
    await node.start()
    await kafka.wait_healthy()  # all three registered again


async def fault(kind: str, settings: Settings, kafka: LocalKafka, fleet: Fleet) -> list[str]:
    events: list[str] = []
    if kind == "leader":
        topic = physical_topic(Topics.SOURCE_CHANGES, settings.kafka_topic_prefix)
        victim = kafka.node(await partition_leader(settings, topic, 0))
        victim.kill()
        events.append(f"kill leader node {victim.node.node_id}")
        await asyncio.sleep(2.0)
        for name in ("embedder", "indexer"):  # a rebalance during the fail-over
            await asyncio.to_thread(fleet.procs[(name, 0)].kill)
            fleet.start(name, 0)
            events.append(f"kill+start {name}")
        await asyncio.sleep(8.0)
        await restart(kafka, victim)
    elif kind == "controller":
        victim = kafka.node(active_controller(kafka))
        victim.kill()
        events.append(f"kill controller node {victim.node.node_id}")
        await asyncio.sleep(10.0)  # past broker.session.timeout.ms: fenced, re-elected
        await restart(kafka, victim)
    else:
        for node in kafka.nodes:
            await node.stop()
            events.append(f"stop node {node.node.node_id}")
            await restart(kafka, node)
    return events


@pytest.mark.parametrize("kinds", [("leader", "controller", "rolling")])
async def test_cluster_faults_lose_and_double_nothing(
    cluster: tuple[Settings, LocalKafka], tmp_path: Path, kinds: tuple[str, ...]
) -> None:
    settings, kafka = cluster
    docs = corpus(N_DOCS)
    env = {
        **os.environ,
        "RAGLINE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "RAGLINE_EMBEDDER_CACHE": "false",
    }
    fleet = Fleet(logs=tmp_path / "fleet", env=env, replicas=1)
    fleet.start_all()
    client = make_client(settings)
    deadline = time.monotonic() + TIMEOUT_S
    figures: dict[str, Any] = {"docs": N_DOCS}
    try:
        await fleet.wait_up()
        base = unique_tenant("base")
        await publish_all(settings, upserts(base, docs))
        await settle(settings, fleet, base, N_DOCS, deadline)
        want = await snapshot(settings, client, base)
        results: dict[str, dict[str, Any]] = {}
        for kind in kinds:
            tenant = unique_tenant(kind)
            t0 = time.monotonic()
            await publish_all(settings, upserts(tenant, docs))
            await asyncio.sleep(1.0)
            events = await fault(kind, settings, kafka, fleet)
            await settle(settings, fleet, tenant, N_DOCS, deadline, quiet_s=QUIET_S)
            got = await snapshot(settings, client, tenant)
            results[kind] = result = compare(want, got)
            figures[kind] = {
                "events": events,
                "seconds": round(time.monotonic() - t0, 1),
                **{k: result[k] for k in ("lost", "duplicated", "documents", "chunks")},
            }
            print(json.dumps({kind: figures[kind]}))
        # every fault ran before any verdict: each one's figures are there to read
        for kind, result in results.items():
            assert result["lost"] == 0 and result["duplicated"] == 0, (kind, result)
            assert not result["differing_documents"], (kind, result)
            assert not result["differing_chunks"], (kind, result)
            assert not result["differing_os"] and not result["vector_mismatch"], (kind, result)
            assert not result["status_not_indexed"], (kind, result)
    finally:
        fleet.stop()
        await client.close()
        print(json.dumps({"kafka_cluster_chaos": figures}))


async def broker_failovers(
    settings: Settings, kafka: LocalKafka, rng: random.Random, stop: asyncio.Event
) -> list[str]:
    """SIGKILL a broker, wait, restart it, again, until ``stop`` (at least three):
    the leader of ``source.changes`` partition 0, the active controller, then any."""
    events: list[str] = []
    topic = physical_topic(Topics.SOURCE_CHANGES, settings.kafka_topic_prefix)
    while len(events) < 6 or not stop.is_set():
        await asyncio.sleep(rng.uniform(1.0, 6.0))
        n = len(events) // 2
        if n == 0:
            node_id = await partition_leader(settings, topic, 0)
        elif n == 1:
            node_id = active_controller(kafka)
        else:
            node_id = rng.choice(kafka.nodes).node.node_id
        victim = kafka.node(node_id)
        victim.kill()
        events.append(f"{time.strftime('%H:%M:%S')} kill broker {node_id}")
        await asyncio.sleep(rng.uniform(3.0, 12.0))  # partly past the 9 s session timeout
        await restart(kafka, victim)
        events.append(f"{time.strftime('%H:%M:%S')} broker {node_id} back")
    return events


async def test_rebalance_storm_during_broker_failovers(
    cluster: tuple[Settings, LocalKafka], tmp_path: Path
) -> None:
    settings, kafka = cluster
    docs = corpus(STORM_DOCS)
    rng = random.Random(SEED)
    env = {
        **os.environ,
        "RAGLINE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "RAGLINE_EMBEDDER_CACHE": "false",  # both runs compute their vectors
    }
    client = make_client(settings)
    deadline = time.monotonic() + TIMEOUT_S
    figures: dict[str, Any] = {"docs": STORM_DOCS, "seed": SEED}
    try:
        # the reference: one replica each, no fault
        base = unique_tenant("base")
        fleet = Fleet(logs=tmp_path / "base", env=env, replicas=1)
        fleet.start_all()
        try:
            await fleet.wait_up()
            await publish_all(settings, upserts(base, docs))
            await settle(settings, fleet, base, STORM_DOCS, deadline)
        finally:
            fleet.stop()
        want = await snapshot(settings, client, base)

        tenant = unique_tenant("storm")
        fleet = Fleet(logs=tmp_path / "storm", env=env, replicas=2)
        fleet.start_all()
        try:
            await fleet.wait_up()
            monkey = Monkey(fleet, rng)
            stop = asyncio.Event()
            t0 = time.monotonic()
            killer = asyncio.create_task(monkey.run(stop))
            brokers = asyncio.create_task(broker_failovers(settings, kafka, rng, stop))
            await publish_all(settings, upserts(tenant, docs))
            while time.monotonic() < deadline and not brokers.done():
                if killer.done():
                    killer.result()
                if await terminal_count(settings, tenant) >= STORM_DOCS:
                    break
                await asyncio.sleep(1.0)
            stop.set()
            await killer
            figures["broker_events"] = await brokers
            await settle(settings, fleet, tenant, STORM_DOCS, deadline, quiet_s=QUIET_S)
            figures["seconds"] = round(time.monotonic() - t0, 1)
            figures["replica_kills"] = monkey.kills
            figures["process_starts"] = fleet.starts
            figures["kill_log"] = monkey.events
        finally:
            fleet.stop()
        got = await snapshot(settings, client, tenant)
        figures["dead_letters"] = await dead_letters(settings, tenant)
    finally:
        await client.close()
    figures.update(compare(want, got))
    report = json.dumps(figures, indent=2, default=str)
    print(f"\nrebalance storm figures:\n{report}")
    assert figures["replica_kills"] > 0, report
    assert_same_stores(figures, report)
    assert figures["dead_letters"] == 0, report
