"""Which components the local stack manages, its timeouts, and where its state lives."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ragline.config import Settings
from ragline.runtime.topics import TopicSettings

__all__ = ["Component", "StackPaths", "StackSettings", "managed_components"]


class Component(StrEnum):
    POSTGRES = "postgres"
    KAFKA = "kafka"
    OPENSEARCH = "opensearch"


class StackSettings(BaseSettings):
    """``RAGLINE_STACK_*``. Components left out of ``components`` are external: the stack
    only checks that they answer, creates topics and applies migrations on them."""

    model_config = SettingsConfigDict(env_prefix="RAGLINE_STACK_", extra="ignore", frozen=True)

    components: Annotated[frozenset[Component], NoDecode] = Field(
        default=frozenset(Component),
        description="comma-separated components the stack starts and stops; '' or 'none': none",
    )
    start_timeout_s: float = Field(default=60.0, gt=0)
    stop_timeout_s: float = Field(default=15.0, gt=0)
    probe_timeout_s: float = Field(default=3.0, gt=0)
    kafka_brokers: int | None = Field(
        default=None,
        ge=1,
        le=5,
        description="nodes of the local Kafka cluster (KRaft, broker+controller each); "
        "default: what the state dir already holds, else 1",
    )
    kafka_replication_factor: int | None = Field(
        default=None,
        ge=1,
        description="of the pipeline topics; default: min(3, live brokers), so a 3-broker "
        "cluster gets 3 (and min.insync.replicas 2) and a single dev broker 1",
    )
    kafka_heap_mb: int = Field(default=512, ge=128, description="-Xmx of each local broker")
    kafka_start_timeout_s: float = Field(
        default=180.0,
        gt=0,
        description="how long a local broker may take to answer (a JVM: ~5 s idle, "
        "over a minute on 2 cores at load 25)",
    )
    kafka_group_initial_rebalance_delay_ms: int = Field(
        default=0,
        ge=0,
        description="local brokers' group.initial.rebalance.delay.ms (Kafka's default 3000 "
        "holds back every first join; 0 suits a dev or test stack)",
    )
    engine_cache_dir: Path | None = Field(
        default=None,
        description="where Maven-fetched engine jars live (default: "
        "$RAGLINE_ENGINE_CACHE or ~/.cache/ragline/engines; outside the checkout)",
    )
    opensearch_start_timeout_s: float = Field(
        default=180.0,
        gt=0,
        description="how long `up` waits for the local OpenSearch JVM (seconds; a loaded "
        "2-core machine was measured at over 60 s)",
    )
    opensearch_heap_mb: int | None = Field(
        default=None,
        ge=256,
        description="max heap of each local OpenSearch node (-Xmx; -Xms is min(512, this)); "
        "default 1024 for one node, 512 each for a cluster",
    )
    opensearch_nodes: int | None = Field(
        default=None,
        ge=1,
        le=5,
        description="nodes of the local OpenSearch cluster (each cluster-manager-eligible "
        "and data; tenant indexes get one replica from 2 nodes on); default: what the state "
        "dir already holds, else as many as RAGLINE_OPENSEARCH_URL lists (node i listens "
        "at entry i)",
    )
    # the configs of the topics `up` creates (their own prefix, RAGLINE_TOPICS_*), read
    # with these settings so a stack is described by one object
    topics: TopicSettings = Field(default_factory=TopicSettings)

    @field_validator("components", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            parts = [p.strip().lower() for p in value.split(",")]
            return frozenset(p for p in parts if p and p != "none")
        return value


def managed_components(settings: Settings, stack: StackSettings) -> tuple[Component, ...]:
    """The components this stack starts, in start order. A Postgres DSN in the
    environment means Postgres is external, whatever ``components`` says."""
    out = [c for c in Component if c in stack.components]
    if settings.pg_dsn is not None and Component.POSTGRES in out:
        out.remove(Component.POSTGRES)
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class StackPaths:
    """Everything the local stack writes lives under ``state_dir``."""

    state_dir: Path

    @classmethod
    def from_settings(cls, settings: Settings) -> StackPaths:
        return cls(state_dir=settings.state_dir.expanduser().resolve())

    @property
    def pgdata(self) -> Path:
        return self.state_dir / "pgdata"

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    @property
    def run(self) -> Path:
        return self.state_dir / "run"

    @property
    def opensearch(self) -> Path:  # node homes and data, kept across restarts
        return self.state_dir / "opensearch"

    def log(self, component: Component) -> Path:
        return self.logs / f"{component.value}.log"

    def pidfile(self, component: Component) -> Path:
        return self.run / f"{component.value}.pid"

    def ensure(self) -> None:
        for d in (self.state_dir, self.logs, self.run):
            d.mkdir(parents=True, exist_ok=True)
