"""The local stack as a whole: ``up`` starts (or finds) each server, then creates the
database, applies migrations and creates the topics; ``down`` stops what the stack runs;
``status`` asks every component over its own protocol.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.platform.stack.base import (
    ComponentStatus,
    ExternalServer,
    LocalOptions,
    Server,
    StartResult,
    StopResult,
)
from ragline.platform.stack.errors import StackError
from ragline.platform.stack.hooks import Hook, PostUpContext, run_post_up_hooks
from ragline.platform.stack.kafka import BrokerTuning, LocalKafka, kafka_probe
from ragline.platform.stack.opensearch import (
    ClusterLayout,
    LocalOpenSearch,
    LocalOpenSearchCluster,
    opensearch_probe,
)
from ragline.platform.stack.postgres import EmbeddedPostgres, ensure_database, postgres_probe
from ragline.platform.stack.settings import Component, StackPaths, StackSettings, managed_components
from ragline.runtime.kafka_security import aiokafka_options
from ragline.runtime.topics import TopicReport, ensure_pipeline_topics
from ragline.store.migrate import MigrationReport, migrate

__all__ = ["StackManager", "UpReport"]


@dataclass(frozen=True, kw_only=True)
class UpReport:
    started: tuple[StartResult, ...]
    database_created: bool
    migrations: MigrationReport
    topics: TopicReport
    # (hook name, summary) of each post-up hook the manager was given (hooks.local_hooks)
    hooks: tuple[tuple[str, str], ...]
    seconds: float


class StackManager:
    """One stack, described by the settings. ``detached=False`` (tests) keeps the servers
    tied to the calling process, so a killed test run does not leave them behind."""

    def __init__(
        self,
        settings: Settings,
        stack: StackSettings,
        *,
        detached: bool = True,
        hooks: Sequence[tuple[str, Hook]] = (),
    ) -> None:
        self.settings = settings
        self.stack = stack
        self.hooks = tuple(hooks)
        self.paths = StackPaths.from_settings(settings)
        self.detached = detached
        self.managed = managed_components(settings, self.stack)
        self.servers: dict[Component, Server] = {c: self._server(c) for c in Component}

    def _options(self, component: Component) -> LocalOptions:
        return LocalOptions(
            log=self.paths.log(component),
            pidfile=self.paths.pidfile(component),
            detached=self.detached,
            probe_timeout_s=self.stack.probe_timeout_s,
            start_timeout_s=self.stack.start_timeout_s,
            stop_timeout_s=self.stack.stop_timeout_s,
        )

    def _server(self, component: Component) -> Server:
        s = self.settings
        if component in self.managed:
            opts = self._options(component)
            if component is Component.POSTGRES:
                return EmbeddedPostgres(s, self.paths.pgdata, opts)
            if component is Component.KAFKA:
                timeout = max(self.stack.start_timeout_s, self.stack.kafka_start_timeout_s)
                return LocalKafka(
                    state_dir=self.paths.state_dir,
                    bootstrap=s.kafka_bootstrap,
                    brokers=self.stack.kafka_brokers,
                    options=replace(opts, start_timeout_s=timeout),
                    engine_cache_dir=self.stack.engine_cache_dir,
                    tuning=BrokerTuning(
                        heap_mb=self.stack.kafka_heap_mb,
                        group_initial_rebalance_delay_ms=(
                            self.stack.kafka_group_initial_rebalance_delay_ms
                        ),
                        format_timeout_s=self.stack.kafka_start_timeout_s,
                    ),
                )
            return self._opensearch(opts)
        timeouts = {
            "probe_timeout_s": self.stack.probe_timeout_s,
            "start_timeout_s": self.stack.start_timeout_s,
        }
        if component is Component.POSTGRES:
            dsn = s.admin_dsn()
            return ExternalServer(component, "RAGLINE_PG_DSN", postgres_probe(dsn), **timeouts)
        if component is Component.KAFKA:
            bootstrap = s.kafka_bootstrap
            probe = kafka_probe(bootstrap, aiokafka_options(s))
            return ExternalServer(component, bootstrap, probe, **timeouts)
        url = s.opensearch_url
        return ExternalServer(component, url, opensearch_probe(s), **timeouts)

    def _opensearch(self, opts: LocalOptions) -> Server:
        """One node, or a local cluster when asked for several, when
        ``RAGLINE_OPENSEARCH_URL`` lists several or the state dir holds one
        (``ClusterLayout``: a kept cluster of another size is an error)."""
        slow = replace(
            opts, start_timeout_s=max(opts.start_timeout_s, self.stack.opensearch_start_timeout_s)
        )
        root = self.paths.opensearch
        nodes = self.stack.opensearch_nodes
        listed = len(self.settings.opensearch_hosts)  # node i listens at URL i
        if max(nodes or 1, listed) > 1 or ClusterLayout.load(root) is not None:
            return LocalOpenSearchCluster(
                self.settings,
                slow,
                root=root,
                nodes=nodes,
                heap_mb=self.stack.opensearch_heap_mb or 512,
                cache_dir=self.stack.engine_cache_dir,
            )
        return LocalOpenSearch(
            self.settings,
            slow,
            root=root,
            heap_mb=self.stack.opensearch_heap_mb or 1024,
            cache_dir=self.stack.engine_cache_dir,
        )

    def client_env(self) -> dict[str, str]:
        """What the services need to reach the servers this stack runs where the settings
        name fewer: a local cluster's every node (``RAGLINE_OPENSEARCH_URL`` of all its
        HTTP addresses; ``RAGLINE_KAFKA_BOOTSTRAP`` of all brokers), so losing the first
        node does not take a component away from them."""
        env: dict[str, str] = {}
        wanted = {
            Component.KAFKA: ("RAGLINE_KAFKA_BOOTSTRAP", self.settings.kafka_bootstrap),
            Component.OPENSEARCH: ("RAGLINE_OPENSEARCH_URL", self.settings.opensearch_url),
        }
        for component, (name, configured) in wanted.items():
            server = self.servers[component]
            if server.managed and server.address != configured:
                env[name] = server.address
        return env

    async def start_servers(self) -> tuple[StartResult, ...]:
        """Start (or find) every server concurrently; all failures are reported together."""
        self.paths.ensure()
        results = await asyncio.gather(
            *(srv.start() for srv in self.servers.values()), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            for e in errors:
                if not isinstance(e, Exception):
                    raise e  # cancellation, KeyboardInterrupt
            if len(errors) == 1:
                raise errors[0]
            raise StackError("stack", "; ".join(str(e) for e in errors))
        return tuple(r for r in results if isinstance(r, StartResult))

    async def _setup_postgres(self) -> tuple[bool, MigrationReport]:
        created = False
        if Component.POSTGRES in self.managed:
            created = await asyncio.to_thread(ensure_database, self.settings)
        try:
            report = await asyncio.to_thread(migrate, self.settings)
        except RaglineError as exc:
            raise StackError("postgres", f"migrations: {exc}") from exc
        return created, report

    async def up(self) -> UpReport:
        """Idempotent: running servers are found by pid and health, never started twice."""
        t0 = time.monotonic()
        started = await self.start_servers()
        (created, migrations), topics = await asyncio.gather(
            self._setup_postgres(),
            ensure_pipeline_topics(
                self.settings,
                partitions=self.settings.kafka_partitions,
                replication_factor=self.stack.kafka_replication_factor,  # None: min(3, brokers)
                timeout_s=self.stack.start_timeout_s,
                topic_settings=self.stack.topics,
            ),
        )
        ctx = PostUpContext(
            settings=self.settings,
            started=frozenset(r.component for r in started if r.action == "started"),
        )
        hooks = await run_post_up_hooks(ctx, self.hooks)
        return UpReport(
            started=started,
            database_created=created,
            migrations=migrations,
            topics=topics,
            hooks=tuple(hooks),
            seconds=time.monotonic() - t0,
        )

    async def down(self) -> tuple[StopResult, ...]:
        """Stop what the stack runs (external components are left alone)."""
        results = await asyncio.gather(*(srv.stop() for srv in self.servers.values()))
        return tuple(results)

    async def status(self) -> tuple[ComponentStatus, ...]:
        results = await asyncio.gather(*(srv.status() for srv in self.servers.values()))
        return tuple(results)
