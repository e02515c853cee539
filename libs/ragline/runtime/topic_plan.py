"""``ragline topics plan``: what a platform team pre-creates when it manages the topics
and the ACLs itself, computed offline (no broker is contacted).

The topics come from ``topic_table`` (the one table ``ragline topics create`` and
``ragline stack up`` create from) with each topic's configs (``topic_configs``); the
ACLs come from ``TOPOLOGY`` (who consumes and produces what), the priority lanes (every
stage reads and writes both lanes of a laned topic, and commits in two groups), the
dead-letter path (a stage writes the ``.dlq`` of every topic it reads, and may quarantine
a document) and the tools that publish or read without being a stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragline.events import BULK, INTERACTIVE, Topics, dlq_topic, lane_topic
from ragline.runtime.topics import TopicSettings, topic_configs, topic_table
from ragline.runtime.topology import TOPOLOGY, consumer_group, physical_group, physical_topic

__all__ = ["Acl", "PlannedTopic", "TopicPlan", "service_acls", "topic_plan"]

Operation = Literal["Read", "Write", "Describe", "Create", "DescribeConfigs"]
ResourceType = Literal["Topic", "Group", "Cluster"]


@dataclass(frozen=True, kw_only=True)
class Acl:
    """One allow rule: ``principal`` may ``operation`` on a ``resource_type`` named
    ``resource`` (``pattern`` prefixed: every name starting with it)."""

    principal: str
    operation: Operation
    resource_type: ResourceType
    resource: str
    pattern: Literal["literal", "prefixed"] = "literal"

    def kafka_acls_args(self, user: str) -> str:
        """The ``kafka-acls.sh --add`` arguments of this rule for principal ``user``."""
        target = {
            "Topic": f"--topic {self.resource!r}"
            if self.resource == "*"
            else f"--topic {self.resource}",
            "Group": f"--group {self.resource!r}"
            if self.resource == "*"
            else f"--group {self.resource}",
            "Cluster": "--cluster",
        }[self.resource_type]
        pattern = " --resource-pattern-type prefixed" if self.pattern == "prefixed" else ""
        return f"--add --allow-principal User:{user} --operation {self.operation} {target}{pattern}"


@dataclass(frozen=True, kw_only=True)
class PlannedTopic:
    name: str  # as the broker names it (with the install's prefix)
    partitions: int
    replication_factor: int
    configs: dict[str, str]


@dataclass(frozen=True, kw_only=True)
class TopicPlan:
    topics: tuple[PlannedTopic, ...]
    acls: tuple[Acl, ...]

    def to_json(self) -> dict[str, Any]:
        principals: dict[str, list[dict[str, str]]] = {}
        for a in self.acls:
            principals.setdefault(a.principal, []).append(
                {
                    "operation": a.operation,
                    "resource_type": a.resource_type,
                    "resource": a.resource,
                    "pattern": a.pattern,
                }
            )
        return {
            "topics": [
                {
                    "name": t.name,
                    "partitions": t.partitions,
                    "replication_factor": t.replication_factor,
                    "configs": t.configs,
                }
                for t in self.topics
            ],
            "acls": principals,
        }

    def render(self) -> str:
        lines = ["# topics (create each with exactly these settings; nothing is auto-created)"]
        for t in self.topics:
            cfg = " ".join(f"{k}={v}" for k, v in sorted(t.configs.items()))
            lines.append(
                f"{t.name:<28} partitions={t.partitions} replication={t.replication_factor} {cfg}"
            )
        lines += ["", "# ACLs per principal (kafka-acls.sh arguments; name the principal yours)"]
        for principal in dict.fromkeys(a.principal for a in self.acls):
            lines.append(f"## {principal}")
            lines += [a.kafka_acls_args(principal) for a in self.acls if a.principal == principal]
        return "\n".join(lines)


def _both_lanes(topics: Sequence[str]) -> list[str]:
    out: list[str] = []
    for t in topics:
        for lane in (INTERACTIVE, BULK):
            name = lane_topic(t, lane)
            if name not in out:
                out.append(name)
    return out


def _by_operation(
    reads: Sequence[str], writes: Sequence[str]
) -> tuple[tuple[Operation, Sequence[str]], ...]:
    return (("Read", reads), ("Write", writes))


def _rules(
    principal: str,
    prefix: str,
    *,
    reads: Sequence[str] = (),
    writes: Sequence[str] = (),
    groups: Sequence[str] = (),
) -> list[Acl]:
    acls = [
        Acl(
            principal=principal,
            operation=op,
            resource_type="Topic",
            resource=physical_topic(t, prefix),
        )
        for op, topics in _by_operation(reads, writes)
        for t in topics
    ]
    acls += [
        Acl(principal=principal, operation="Read", resource_type="Group", resource=g)
        for g in groups
    ]
    return acls


def service_acls(prefix: str = "", *, dlq_group: str = "ragline-dlq-tool") -> list[Acl]:
    """Every allow rule the services and tools need on a cluster with an authorizer.

    Read on a topic includes the metadata a client needs (Describe is implied by Read and
    Write); idempotent producers need no cluster-level right since Kafka 2.8 (KIP-679:
    Write on a topic suffices)."""
    acls: list[Acl] = []
    for svc in TOPOLOGY:
        reads = _both_lanes(svc.consumes)
        writes = _both_lanes(
            [*svc.produces, Topics.DOC_QUARANTINED.value]  # any stage may quarantine
        ) + [dlq_topic(t) for t in svc.consumes]
        groups = [consumer_group(svc.name, prefix)]
        if any(lane_topic(t, BULK) != t for t in svc.consumes):
            groups.append(consumer_group(svc.name, prefix, BULK))
        acls += _rules(svc.name, prefix, reads=reads, writes=writes, groups=groups)
    # the producers that are no stage: `ragline sync`/`watch` and the connector's webhook
    # (served by the connector's process, so the connector principal needs it as well)
    intake = _both_lanes([Topics.SOURCE_CHANGES.value])
    acls += _rules("sync-watch", prefix, writes=intake)
    acls += _rules("connector", prefix, writes=intake)
    # `ragline dlq list|replay|purge` and the console's dead-letter page: read every
    # .dlq, commit in the tool's group, replay into either lane of the pipeline topics
    acls += _rules(
        "dlq-tool",
        prefix,
        reads=[dlq_topic(t.value) for t in Topics],
        writes=_both_lanes([t.value for t in Topics]),
        groups=[physical_group(dlq_group, prefix)],  # the group DlqReader commits in
    )
    # `ragline topics create` and `ragline lag` (an operator, or the chart's setup job):
    # every topic and group of this install (all of them without a prefix)
    pattern: Literal["literal", "prefixed"] = "prefixed" if prefix else "literal"
    operator: tuple[tuple[Operation, ResourceType], ...] = (
        ("Create", "Topic"),
        ("Describe", "Topic"),
        ("DescribeConfigs", "Topic"),
        ("Describe", "Group"),
    )
    acls += [
        Acl(
            principal="operator",
            operation=op,
            resource_type=rt,
            resource=prefix or "*",
            pattern=pattern,
        )
        for op, rt in operator
    ]
    acls.append(
        Acl(
            principal="operator",
            operation="Describe",
            resource_type="Cluster",
            resource="kafka-cluster",
        )
    )
    return acls


def topic_plan(
    settings: TopicSettings,
    *,
    prefix: str,
    partitions: int,
    replication_factor: int,
    max_message_bytes: int,
    dlq_group: str = "ragline-dlq-tool",
) -> TopicPlan:
    """What ``ragline topics create`` would create on an empty cluster, and the ACLs."""
    rows = topic_table(
        settings,
        partitions=partitions,
        replication_factor=replication_factor,
        max_message_bytes=max_message_bytes,
    )
    topics = tuple(
        PlannedTopic(
            name=physical_topic(r.logical, prefix),
            partitions=r.partitions,
            replication_factor=r.replication_factor,
            configs=topic_configs(
                r.logical,
                settings,
                replication_factor=r.replication_factor,
                max_message_bytes=max_message_bytes,
            ),
        )
        for r in rows
    )
    return TopicPlan(topics=topics, acls=tuple(service_acls(prefix, dlq_group=dlq_group)))
