"""The Kafka broker: locally, real Apache Kafka 4 in KRaft mode (no ZooKeeper) from jars
Maven fetches into the engine cache (``engines/kafka/pom.xml``, checked against
``jars.sha256``); the probe speaks plain Kafka (aiokafka), so a real cluster passes it
the same way.

Layout under the stack's state directory::

    kafka/cluster.json          cluster id, and per node its id and ports (kept: a
                                controller port never moves under a formatted log)
    kafka/node-<id>/server.properties   written at every start from the settings
    kafka/node-<id>/data/       the log dir, formatted once (StorageTool), never again

One node by default (broker and controller in one JVM); ``--brokers 3`` runs three such
nodes on this host as one cluster (static quorum voters, replication factor 3,
``min.insync.replicas=2``).
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil
from aiokafka.admin import AIOKafkaAdminClient

from ragline.errors import BackendUnavailable, ConfigError
from ragline.platform.stack import process
from ragline.platform.stack.base import (
    Health,
    LocalOptions,
    LocalProcessServer,
    Probe,
    ServerGroup,
    StartResult,
    read_cluster_file,
    write_cluster_file,
)
from ragline.platform.stack.engines import EngineJars, engine, ensure_engine, java_binary
from ragline.platform.stack.errors import StackError
from ragline.platform.stack.settings import Component
from ragline.runtime.health import tcp_answers
from ragline.runtime.kafka_errors import BROKER_UNREACHABLE, kafka_errors

__all__ = [
    "BROKER_UNREACHABLE",
    "KafkaLayout",
    "KafkaNode",
    "LocalKafka",
    "kafka_probe",
    "parse_bootstrap",
    "parse_host_port",
]

_MAIN_CLASS = "kafka.Kafka"
_STORAGE_TOOL = "kafka.tools.StorageTool"


def parse_host_port(address: str, *, what: str) -> tuple[str, int]:
    """``host:port`` of a server the stack runs itself (one address, no scheme)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or "," in address or "/" in address:
        raise ConfigError(f"{what}={address!r}: the local stack needs one host:port to listen on")
    return host.strip("[]"), int(port)


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """Every ``host:port`` of a comma-separated bootstrap list."""
    return [
        parse_host_port(part.strip(), what="RAGLINE_KAFKA_BOOTSTRAP")
        for part in bootstrap.split(",")
        if part.strip()
    ]


def kafka_probe(
    bootstrap: str, options: Mapping[str, Any] | None = None, *, min_brokers: int = 1
) -> Probe:
    """Healthy when the cluster answers a metadata request over the Kafka protocol with at
    least ``min_brokers`` live brokers."""
    addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]

    async def probe(timeout_s: float) -> Health:
        refusals: list[str] = []
        for address in addresses:  # a cheap check first: aiokafka logs loudly when refused
            host, _, port = address.rpartition(":")
            if not port.isdigit():
                refusals.clear()
                break
            refused = await tcp_answers(host.strip("[]"), int(port), timeout_s)
            if refused is None:
                refusals.clear()
                break
            refusals.append(refused)
        if refusals:
            return Health(ok=False, detail=f"{BROKER_UNREACHABLE}: {'; '.join(refusals)}")
        client = AIOKafkaAdminClient(
            bootstrap_servers=bootstrap,
            request_timeout_ms=int(timeout_s * 1000),
            **(options or {}),
        )
        try:
            with kafka_errors("describe the cluster"):
                await asyncio.wait_for(client.start(), timeout_s)
                meta = await asyncio.wait_for(client.describe_cluster(), timeout_s)
        except BackendUnavailable as exc:
            name = type(exc.__cause__).__name__
            return Health(ok=False, detail=f"{BROKER_UNREACHABLE}: kafka protocol: {name}")
        finally:
            await client.close()
        brokers = meta.get("brokers", [])
        if len(brokers) < min_brokers:
            return Health(ok=False, detail=f"{len(brokers)} of {min_brokers} broker(s) up")
        return Health(ok=True, detail=f"{len(brokers)} broker(s)")

    return probe


def _new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, base64url without padding (22 characters);
    like Kafka's own, never starting with '-' (it would read as a flag)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


@dataclass(frozen=True, kw_only=True)
class NodePorts:
    node_id: int
    host: str
    port: int
    controller_port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, kw_only=True)
class KafkaLayout:
    """The cluster this state directory holds: its id and nodes (``cluster.json``)."""

    root: Path
    cluster_id: str
    nodes: tuple[NodePorts, ...]

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.nodes)

    @property
    def voters(self) -> str:
        return ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in self.nodes)

    def node_dir(self, node_id: int) -> Path:
        return self.root / f"node-{node_id}"

    @classmethod
    def load(cls, root: Path) -> KafkaLayout | None:
        raw = read_cluster_file(root, Component.KAFKA)
        if raw is None:
            return None
        nodes = tuple(
            NodePorts(
                node_id=int(n["node_id"]),
                host=str(n["host"]),
                port=int(n["port"]),
                controller_port=int(n["controller_port"]),
            )
            for n in raw["nodes"]
        )
        return cls(root=root, cluster_id=str(raw["cluster_id"]), nodes=nodes)

    def save(self) -> None:
        body = {
            "cluster_id": self.cluster_id,
            "nodes": [
                {
                    "node_id": n.node_id,
                    "host": n.host,
                    "port": n.port,
                    "controller_port": n.controller_port,
                }
                for n in self.nodes
            ],
        }
        write_cluster_file(self.root, body)

    @classmethod
    def resolve(cls, root: Path, bootstrap: str, brokers: int | None) -> KafkaLayout:
        """The layout kept in ``root``, else a new one of ``brokers`` nodes (default 1).

        Node 1 listens where ``bootstrap`` says (and node ``i`` at its ``i``-th address
        when it lists several); the other ports are picked free once and kept. A kept
        cluster of another size is an error: its logs hold that quorum."""
        from ragline.platform.stack.testing import free_port

        wanted = parse_bootstrap(bootstrap)
        if not wanted:
            raise ConfigError("RAGLINE_KAFKA_BOOTSTRAP is empty")
        kept = cls.load(root)
        if kept is not None:
            if brokers is not None and brokers != len(kept.nodes):
                raise StackError(
                    Component.KAFKA,
                    f"{root} holds a {len(kept.nodes)}-broker cluster, {brokers} asked: use "
                    "another RAGLINE_STATE_DIR (or delete that directory and its data)",
                )
            nodes = []
            for i, n in enumerate(kept.nodes):
                host, port = wanted[i] if i < len(wanted) else (n.host, n.port)
                nodes.append(
                    NodePorts(
                        node_id=n.node_id, host=host, port=port, controller_port=n.controller_port
                    )
                )
            layout = cls(root=root, cluster_id=kept.cluster_id, nodes=tuple(nodes))
        else:
            count = brokers or max(len(wanted), 1)
            host = wanted[0][0]
            nodes = []
            for i in range(count):
                h, port = wanted[i] if i < len(wanted) else (host, free_port(host))
                nodes.append(
                    NodePorts(node_id=i + 1, host=h, port=port, controller_port=free_port(h))
                )
            layout = cls(root=root, cluster_id=_new_cluster_id(), nodes=tuple(nodes))
        return layout


@dataclass(frozen=True, kw_only=True)
class BrokerTuning:
    """What the stack decides about its local brokers (StackSettings)."""

    heap_mb: int = 512
    # 0 locally: a group's first join is not held back 3 s (the broker default)
    group_initial_rebalance_delay_ms: int = 0
    # the storage tool's one-off JVM is part of the start: on a loaded machine it took
    # over 120 s (the start timeout, RAGLINE_STACK_KAFKA_START_TIMEOUT_S, bounds both)
    format_timeout_s: float = 120.0


def server_properties(layout: KafkaLayout, node: NodePorts, tuning: BrokerTuning) -> str:
    """``server.properties`` of one combined broker+controller node."""
    n = len(layout.nodes)
    internal_rf = min(n, 3)
    min_isr = 2 if internal_rf >= 3 else 1
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": layout.voters,
        "listeners": f"PLAINTEXT://{node.host}:{node.port},"
        f"CONTROLLER://{node.host}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{node.host}:{node.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(layout.node_dir(node.node_id) / "data"),
        # topics are provisioned explicitly (ragline.runtime.topics), never by a typo
        "auto.create.topics.enable": "false",
        "default.replication.factor": str(internal_rf),
        "min.insync.replicas": str(min_isr),
        "unclean.leader.election.enable": "false",
        # the internal topics: with the defaults (RF 3) one broker never gets a group
        # coordinator
        "offsets.topic.replication.factor": str(internal_rf),
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": str(internal_rf),
        "transaction.state.log.min.isr": str(min_isr),
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": str(internal_rf),
        "share.coordinator.state.topic.min.isr": str(min_isr),
        "group.initial.rebalance.delay.ms": str(tuning.group_initial_rebalance_delay_ms),
        "num.partitions": "1",
    }
    lines = [f"# written by ragline's stack at every start of node {node.node_id}: edits are lost"]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def _cmdline(pid: int) -> list[str]:
    try:
        return [str(part) for part in psutil.Process(pid).cmdline()]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


class KafkaNode(LocalProcessServer):
    """One ``java kafka.Kafka server.properties`` process (broker + controller)."""

    component = Component.KAFKA
    executable_name = "java"

    def __init__(
        self,
        layout: KafkaLayout,
        node: NodePorts,
        options: LocalOptions,
        *,
        jars: JarSource,
        tuning: BrokerTuning,
    ) -> None:
        self.layout = layout
        self.node = node
        self.address = node.address
        self.jars = jars
        self.tuning = tuning
        self.home = layout.node_dir(node.node_id)
        self.properties = self.home / "server.properties"
        super().__init__(kafka_probe(node.address), options)

    def pid(self) -> int | None:
        pid = process.read_pid(self.pidfile)
        if not process.is_running(pid, expect=self.executable_name):
            return None
        assert pid is not None
        cmd = _cmdline(pid)  # a recycled pid running another java is not ours
        return pid if _MAIN_CLASS in cmd and str(self.properties) in cmd else None

    def _java(self, main: str, *args: str, heap_mb: int) -> tuple[str, ...]:
        eng = self.jars.get()
        log4j = eng.engine.resource("log4j2.xml")
        return (
            self.jars.java(),
            f"-Xms{min(256, heap_mb)}m",
            f"-Xmx{heap_mb}m",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={self.home / 'logs'}",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            eng.classpath,
            main,
            *args,
        )

    def argv(self) -> tuple[str, ...]:
        return self._java(_MAIN_CLASS, str(self.properties), heap_mb=self.tuning.heap_mb)

    def prepare(self) -> bool:
        """Write ``server.properties``; format the log dir unless it already is (a kept
        log dir is never formatted again). Returns True when it formatted."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.properties.write_text(server_properties(self.layout, self.node, self.tuning))
        data = self.home / "data"
        if (data / "meta.properties").is_file():
            return False
        argv = self._java(
            _STORAGE_TOOL,
            "format",
            "--cluster-id",
            self.layout.cluster_id,
            "--config",
            str(self.properties),
            "--ignore-formatted",
            heap_mb=256,
        )
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=self.tuning.format_timeout_s, check=False
        )
        if done.returncode != 0:
            tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
            raise StackError(
                Component.KAFKA, f"formatting {data} failed (exit {done.returncode}): {tail}"
            )
        return True

    async def start(self) -> StartResult:
        if self.pid() is None:
            await asyncio.to_thread(self.prepare)
        return await super().start()

    def kill(self) -> int | None:
        """SIGKILL this node (fault tests); returns the pid it had."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, 9)
        return pid


class JarSource:
    """The engine's jars and the Java binary, found once per stack and only when a node
    is started (``down`` and ``status`` need neither)."""

    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = cache_dir
        self._jars: EngineJars | None = None
        self._java: str | None = None

    def java(self) -> str:
        if self._java is None:
            self._java = java_binary()
        return self._java

    def get(self) -> EngineJars:
        if self._jars is None:
            self._jars = ensure_engine(engine("kafka"), self.cache_dir)
        return self._jars


class LocalKafka(ServerGroup):
    """The local cluster: one node (default) or several on this host, started together
    (a quorum needs its majority up) and reported as one component."""

    component = Component.KAFKA
    managed = True
    nodes: list[KafkaNode]

    def __init__(
        self,
        *,
        state_dir: Path,
        bootstrap: str,
        brokers: int | None,
        options: LocalOptions,
        engine_cache_dir: Path | None = None,
        tuning: BrokerTuning | None = None,
    ) -> None:
        self.layout = KafkaLayout.resolve(state_dir / "kafka", bootstrap, brokers)
        self.address = self.layout.bootstrap
        self.log = options.log
        self.jars = JarSource(engine_cache_dir)
        self.tuning = tuning or BrokerTuning()
        count = len(self.layout.nodes)
        probe = kafka_probe(self.address, min_brokers=count)
        super().__init__(
            probe, probe_timeout_s=options.probe_timeout_s, start_timeout_s=options.start_timeout_s
        )
        self.nodes = [
            KafkaNode(
                self.layout,
                node,
                options if i == 0 else _sibling(options, node),
                jars=self.jars,
                tuning=self.tuning,
            )
            for i, node in enumerate(self.layout.nodes)
        ]

    def node(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.node.node_id == node_id)

    async def prepare(self) -> None:
        # fetch (or check) the jars once, before the nodes race for them
        await asyncio.to_thread(self.jars.get)
        await asyncio.to_thread(self.jars.java)
        self.layout.save()


def _sibling(options: LocalOptions, node: NodePorts) -> LocalOptions:
    """Log and pid file of node ``i`` > 1 beside node 1's (``kafka-<i>.log``)."""
    suffix = f"-{node.node_id}"
    return replace(
        options,
        log=options.log.with_name(f"{options.log.stem}{suffix}{options.log.suffix}"),
        pidfile=options.pidfile.with_name(
            f"{options.pidfile.stem}{suffix}{options.pidfile.suffix}"
        ),
    )
