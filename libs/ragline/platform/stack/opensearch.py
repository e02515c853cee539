"""OpenSearch for the local stack: a real OpenSearch 2.19.6 node from Maven-fetched jars
(``engines/opensearch/``: the POM, the lock of jar digests, a one-file launcher and its
log4j2.xml), its data under the stack's state directory and kept across restarts. The
probe uses opensearch-py's cluster health, so an external cluster passes it the same way.

One node by default (``discovery.type=single-node``, no replicas: health green). With
``RAGLINE_STACK_OPENSEARCH_NODES=3`` (``ragline stack up --opensearch-nodes 3``) three
nodes on this host form one cluster (every node cluster-manager-eligible and data;
``discovery.seed_hosts`` and ``cluster.initial_cluster_manager_nodes`` name the three;
tenant indexes then get one replica per shard through ``auto_expand_replicas``). Node
``i`` answers at the ``i``-th entry of ``RAGLINE_OPENSEARCH_URL`` (a comma-separated list;
one entry: node 1); the other nodes' HTTP ports and every transport port are picked free
once and kept in ``<state>/opensearch/cluster.json``. The cluster's address (``stack
status``, ``stack up``) lists every node: that is the URL the services get.

No security plugin runs locally (plain HTTP on 127.0.0.1); the Helm chart keeps TLS and
authentication for production.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from opensearchpy import OpenSearch
from opensearchpy.exceptions import OpenSearchException

from ragline.config import Settings
from ragline.errors import ConfigError
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
from ragline.platform.stack.engines import (
    Engine,
    EngineJars,
    engine,
    ensure_engine,
    java_binary,
)
from ragline.platform.stack.errors import StackError
from ragline.platform.stack.settings import Component

__all__ = [
    "ENGINE_NAME",
    "ClusterLayout",
    "ClusterNode",
    "LocalOpenSearch",
    "LocalOpenSearchCluster",
    "NodeLayout",
    "compile_launcher",
    "jvm_options",
    "node_settings",
    "opensearch_probe",
]

ENGINE_NAME = "opensearch"
_LAUNCHER = "Launcher.java"
_LOG4J = "log4j2.xml"
_MAIN_CLASS = "Launcher"


def _health(settings: Settings, timeout_s: float, min_nodes: int = 1) -> Health:
    from ragline.store.os_client import client_options, failover_options, tls_problem

    try:
        options = {**failover_options(settings), **client_options(settings, sync=True)}
    except ConfigError as exc:
        return Health(ok=False, detail=str(exc))
    # every node: a cluster whose first node is down still answers (and says yellow)
    client = OpenSearch(hosts=list(settings.opensearch_hosts), timeout=timeout_s, **options)
    try:
        health = client.cluster.health()
    except (OpenSearchException, OSError) as exc:
        # a TLS problem says what to fix; anything else only its kind
        return Health(ok=False, detail=tls_problem(exc) or f"opensearch: {type(exc).__name__}")
    finally:
        client.close()
    status = str(health.get("status", "unknown"))
    nodes = int(health.get("number_of_nodes", 0))
    return Health(
        ok=status in {"green", "yellow"} and nodes >= min_nodes,
        detail=f"cluster {status}, {nodes} node(s)"
        + (f" of {min_nodes}" if nodes < min_nodes else ""),
    )


class _QuietHealthPolls(logging.Filter):
    """opensearch-py logs every refused connection as a WARNING with a traceback; a
    health probe of a server that is still starting refuses by design."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "/_cluster/health" not in record.getMessage()


_QUIET = _QuietHealthPolls()


def opensearch_probe(settings: Settings, *, min_nodes: int = 1) -> Probe:
    """Healthy when ``GET /_cluster/health`` answers green or yellow with at least
    ``min_nodes`` nodes in the cluster."""
    logger = logging.getLogger("opensearch")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)

    async def probe(timeout_s: float) -> Health:
        return await asyncio.to_thread(_health, settings, timeout_s, min_nodes)

    return probe


@dataclass(frozen=True, kw_only=True)
class NodeLayout:
    """Where one node keeps its files: everything under ``<state>/opensearch/<node>``."""

    root: Path
    node_name: str = "node-1"

    @property
    def home(self) -> Path:
        return self.root / self.node_name / "home"

    @property
    def data(self) -> Path:  # kept across restarts: the index survives `down`/`up`
        return self.root / self.node_name / "data"

    @property
    def logs(self) -> Path:
        return self.root / self.node_name / "logs"


@dataclass(frozen=True, kw_only=True)
class ClusterNode:
    name: str
    http_port: int
    transport_port: int


@dataclass(frozen=True, kw_only=True)
class ClusterLayout:
    """A local cluster of several nodes on one host (``cluster.json`` under ``root``):
    node names, HTTP and transport ports, kept so that a restarted node finds its peers
    where they were."""

    root: Path
    host: str
    nodes: tuple[ClusterNode, ...]

    @property
    def seed_hosts(self) -> str:
        return ",".join(f"{self.host}:{n.transport_port}" for n in self.nodes)

    @property
    def names(self) -> str:
        return ",".join(n.name for n in self.nodes)

    @property
    def urls(self) -> str:
        """Every node's HTTP URL, comma-separated (a ``RAGLINE_OPENSEARCH_URL``)."""
        return ",".join(f"http://{self.host}:{n.http_port}" for n in self.nodes)

    @classmethod
    def load(cls, root: Path) -> ClusterLayout | None:
        raw = read_cluster_file(root, ENGINE_NAME)
        if raw is None:
            return None
        nodes = tuple(
            ClusterNode(
                name=str(n["name"]),
                http_port=int(n["http_port"]),
                transport_port=int(n["transport_port"]),
            )
            for n in raw["nodes"]
        )
        return cls(root=root, host=str(raw["host"]), nodes=nodes)

    def save(self) -> None:
        body = {
            "host": self.host,
            "nodes": [
                {"name": n.name, "http_port": n.http_port, "transport_port": n.transport_port}
                for n in self.nodes
            ],
        }
        write_cluster_file(self.root, body)

    @classmethod
    def resolve(cls, root: Path, wanted: list[tuple[str, int]], nodes: int | None) -> ClusterLayout:
        """The cluster kept in ``root``, else a new one of ``nodes`` nodes (default: as
        many as ``wanted`` lists). Node ``i`` listens at ``wanted[i]`` when the URL list
        has it (the addresses may move between runs), the other ports are picked free
        once and kept. A kept cluster (or a single node's data) of another size is an
        error: its data holds that cluster's state; so is a URL list naming more nodes
        than the cluster has, or nodes on several hosts."""
        from ragline.platform.stack.testing import free_port

        host = wanted[0][0]
        if any(h != host for h, _ in wanted):
            raise ConfigError(
                "RAGLINE_OPENSEARCH_URL: the local cluster runs on one host, the URLs name "
                f"{sorted({h for h, _ in wanted})}"
            )
        kept = cls.load(root)
        count = nodes or (len(kept.nodes) if kept else len(wanted))
        held = len(kept.nodes) if kept else (1 if (root / "node-1" / "data").exists() else count)
        if held != count:
            raise StackError(
                ENGINE_NAME,
                f"{root} holds a {held}-node OpenSearch, {count} asked: use another "
                "RAGLINE_STATE_DIR (or delete that directory and its data)",
            )
        if len(wanted) > count:
            raise ConfigError(
                f"RAGLINE_OPENSEARCH_URL lists {len(wanted)} nodes, the local cluster has "
                f"{count} (RAGLINE_STACK_OPENSEARCH_NODES / --opensearch-nodes)"
            )
        if kept is not None:
            moved = tuple(
                replace(n, http_port=wanted[i][1]) if i < len(wanted) else n
                for i, n in enumerate(kept.nodes)
            )
            return replace(kept, host=host, nodes=moved)
        return cls(
            root=root,
            host=host,
            nodes=tuple(
                ClusterNode(
                    name=f"node-{i + 1}",
                    http_port=wanted[i][1] if i < len(wanted) else free_port(host),
                    transport_port=0 if count == 1 else free_port(host),
                )
                for i in range(count)
            ),
        )


def node_settings(
    layout: NodeLayout,
    *,
    host: str,
    http_port: int,
    transport_port: int | None = None,
    cluster: ClusterLayout | None = None,
) -> dict[str, str]:
    """The node's settings (passed to the launcher as ``key=value`` arguments).

    One node: ``discovery.type=single-node`` and a transport port the OS picks (nothing
    connects to it). In a ``cluster`` of several: its seed hosts and initial
    cluster-manager nodes instead, on the node's kept transport port. The disk-watermark
    allocator is off: a developer's full disk must not turn the local index read-only.
    """
    discovery = (
        {"discovery.type": "single-node"}
        if cluster is None or len(cluster.nodes) < 2
        else {
            "discovery.seed_hosts": cluster.seed_hosts,
            "cluster.initial_cluster_manager_nodes": cluster.names,
        }
    )
    return {
        "path.home": str(layout.home),
        "path.data": str(layout.data),
        "path.logs": str(layout.logs),
        "cluster.name": "ragline-local",
        "node.name": layout.node_name,
        **discovery,
        "network.host": host,
        "http.port": str(http_port),
        "transport.port": str(transport_port if transport_port is not None else 0),
        "cluster.routing.allocation.disk.threshold_enabled": "false",
    }


def jvm_options(heap_mb: int, *, log4j: Path, parent_pid: int | None) -> list[str]:
    """JVM flags of the node: G1, a fixed heap floor of min(512 MB, heap), loopback-only
    netty tuning as OpenSearch's own ``jvm.options``, and the parent watch for tests."""
    floor = min(512, heap_mb)
    opts = [
        f"-Xms{floor}m",
        f"-Xmx{heap_mb}m",
        "-XX:+UseG1GC",
        "-Dfile.encoding=UTF-8",
        "-Djava.locale.providers=SPI,COMPAT",
        "-Djava.awt.headless=true",
        "-Djna.nosys=true",
        "-Dio.netty.noUnsafe=true",
        "-Dio.netty.noKeySetOptimization=true",
        "-Dio.netty.recycler.maxCapacityPerThread=0",
        "-Dlog4j.shutdownHookEnabled=false",
        "-Dlog4j2.disable.jmx=true",
        f"-Dlog4j2.configurationFile={log4j}",
    ]
    if parent_pid is not None:
        opts.append(f"-Dragline.parent.pid={parent_pid}")
    return opts


def _javac_for(java: str) -> str:
    javac = Path(java).resolve().parent / "javac"
    if javac.is_file() and os.access(javac, os.X_OK):
        return str(javac)
    found = shutil.which("javac")
    if found is None:
        raise StackError(
            ENGINE_NAME,
            f"no javac beside {java} or on PATH: the local OpenSearch launcher is compiled "
            "once with a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)",
        )
    return found


def compile_launcher(eng: Engine, jars: EngineJars, java: str) -> Path:
    """The launcher compiled once into the engine cache (keyed by the digest of its
    source and log4j2.xml), with log4j2.xml beside it; returns that class directory."""
    source = eng.resource(_LAUNCHER)
    log4j = eng.resource(_LOG4J)
    digest = hashlib.sha256(source.read_bytes() + log4j.read_bytes()).hexdigest()[:16]
    target = jars.directory.parent / f"{eng.name}-{jars.version}-launcher-{digest}"
    if (target / f"{_MAIN_CLASS}.class").is_file():
        return target
    work = Path(tempfile.mkdtemp(prefix=f".{eng.name}-launcher-", dir=target.parent))
    try:
        done = subprocess.run(
            [_javac_for(java), "-nowarn", "-cp", jars.classpath, "-d", str(work), str(source)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise StackError(ENGINE_NAME, "cannot compile the launcher: " + " | ".join(tail))
        shutil.copyfile(log4j, work / _LOG4J)
        try:
            work.replace(target)
        except OSError:  # a concurrent start compiled it first
            if not (target / f"{_MAIN_CLASS}.class").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _listen_addresses(settings: Settings) -> list[tuple[str, int]]:
    """``(host, port)`` of every ``RAGLINE_OPENSEARCH_URL`` entry: node ``i`` of the
    local stack listens at entry ``i`` (``http://host:port``, nothing else)."""
    out = []
    for url in settings.opensearch_hosts:
        parts = urlsplit(url)
        if (
            parts.scheme != "http"
            or parts.hostname is None
            or parts.port is None
            or parts.path.strip("/")
        ):
            raise ConfigError(
                f"RAGLINE_OPENSEARCH_URL={url!r}: the local stack needs http://host:port "
                "to listen on"
            )
        out.append((parts.hostname, parts.port))
    return out


class LocalOpenSearch(LocalProcessServer):
    """One OpenSearch node run by the stack. The jars are fetched (and checked) before
    the process starts, outside the start-up timeout."""

    component = Component.OPENSEARCH
    executable_name = "java"

    def __init__(
        self,
        settings: Settings,
        options: LocalOptions,
        *,
        root: Path,
        heap_mb: int,
        cache_dir: Path | None = None,
        cluster: ClusterLayout | None = None,
        node: int = 0,
    ) -> None:
        """``cluster`` and ``node``: this node is ``cluster.nodes[node]`` (one node of a
        local cluster, ``LocalOpenSearchCluster``); without, the single node."""
        self.host, url_port = _listen_addresses(settings)[0]
        me = cluster.nodes[node] if cluster is not None else None
        self.http_port = me.http_port if me is not None else url_port
        self.transport_port = me.transport_port if me is not None else None
        self.cluster = cluster
        self.address = f"http://{self.host}:{self.http_port}"
        own = settings.model_copy(update={"opensearch_url": self.address})
        self.layout = NodeLayout(root=root, node_name=me.name if me is not None else "node-1")
        self.heap_mb = heap_mb
        self.cache_dir = cache_dir
        # (java, classpath, log4j2.xml) once prepared
        self._launch: tuple[str, str, Path] | None = None
        super().__init__(opensearch_probe(own), options)

    @classmethod
    def standalone(
        cls, settings: Settings, directory: Path, *, heap_mb: int = 512
    ) -> LocalOpenSearch:
        """A node outside any stack (tests of faults, the tuners): everything under
        ``directory``, on ``settings.opensearch_url``, tied to this process."""
        options = LocalOptions(
            log=directory / "opensearch.log",
            pidfile=directory / "opensearch.pid",
            detached=False,
            probe_timeout_s=3.0,
            start_timeout_s=180.0,
            stop_timeout_s=15.0,
        )
        return cls(settings, options, root=directory / "node", heap_mb=heap_mb)

    def prepare(self) -> tuple[str, str, Path]:
        """Java checked, jars fetched or verified, launcher compiled (blocking)."""
        java = java_binary()
        eng = engine(ENGINE_NAME)
        jars = ensure_engine(eng, self.cache_dir)
        classes = compile_launcher(eng, jars, java)
        self._launch = (java, f"{jars.classpath}{os.pathsep}{classes}", classes / _LOG4J)
        return self._launch

    async def start(self) -> StartResult:
        await asyncio.to_thread(self.prepare)
        return await super().start()

    def argv(self) -> tuple[str, ...]:
        java, classpath, log4j = self._launch or self.prepare()
        parent = None if self.options.detached else os.getpid()
        settings = node_settings(
            self.layout,
            host=self.host,
            http_port=self.http_port,
            transport_port=self.transport_port,
            cluster=self.cluster,
        )
        return (
            java,
            *jvm_options(self.heap_mb, log4j=log4j, parent_pid=parent),
            "-cp",
            classpath,
            _MAIN_CLASS,
            *(f"{k}={v}" for k, v in settings.items()),
        )

    def kill(self) -> int | None:
        """SIGKILL this node (fault tests); returns the pid it had."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, 9)
        return pid


class LocalOpenSearchCluster(ServerGroup):
    """Several local nodes on this host as one cluster, started together (the first
    election needs a majority of the initial cluster-manager nodes) and reported as one
    component; healthy once every node has joined."""

    component = Component.OPENSEARCH
    managed = True
    nodes: list[LocalOpenSearch]

    def __init__(
        self,
        settings: Settings,
        options: LocalOptions,
        *,
        root: Path,
        nodes: int | None,
        heap_mb: int,
        cache_dir: Path | None = None,
    ) -> None:
        self.layout = ClusterLayout.resolve(root, _listen_addresses(settings), nodes)
        # what the services need: every node (RAGLINE_OPENSEARCH_URL, `stack status`)
        self.address = self.layout.urls
        self.log = options.log
        count = len(self.layout.nodes)
        everyone = settings.model_copy(update={"opensearch_url": self.address})
        probe = opensearch_probe(everyone, min_nodes=count)
        super().__init__(
            probe, probe_timeout_s=options.probe_timeout_s, start_timeout_s=options.start_timeout_s
        )
        self.nodes = [
            LocalOpenSearch(
                settings,
                options if i == 0 else _sibling(options, i + 1),
                root=root,
                heap_mb=heap_mb,
                cache_dir=cache_dir,
                cluster=self.layout,
                node=i,
            )
            for i in range(count)
        ]

    async def prepare(self) -> None:
        # jars fetched (or checked) and the launcher compiled once, before the race
        await asyncio.to_thread(self.nodes[0].prepare)
        self.layout.save()


def _sibling(options: LocalOptions, number: int) -> LocalOptions:
    """Log and pid file of node ``number`` > 1 beside node 1's (``opensearch-<n>.log``)."""
    return replace(
        options,
        log=options.log.with_name(f"{options.log.stem}-{number}{options.log.suffix}"),
        pidfile=options.pidfile.with_name(
            f"{options.pidfile.stem}-{number}{options.pidfile.suffix}"
        ),
    )
