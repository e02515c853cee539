"""The local Apache Kafka: one pinned version everywhere, the node configs it is started
with, and a cluster layout that is kept (a formatted log dir must keep its cluster id and
controller ports)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ragline.platform.stack.engines import engine, read_lock
from ragline.platform.stack.errors import StackError
from ragline.platform.stack.kafka import BrokerTuning, KafkaLayout, server_properties
from ragline.runtime.topics import TopicSettings, default_replication_factor

REPO = Path(__file__).resolve().parents[3]


def _props(text: str) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )


def test_one_kafka_version_for_the_stack_compose_and_chart() -> None:
    eng = engine("kafka")
    version = eng.version
    assert re.fullmatch(r"4\.\d+\.\d+", version)
    lock = read_lock(eng.lock)
    assert f"kafka_2.13-{version}.jar" in lock and f"kafka-clients-{version}.jar" in lock
    # Kafka 4.0-4.2 log through slf4j 1.7: the 1.x bridge, never the slf4j2 one
    assert any(n.startswith("log4j-slf4j-impl-") for n in lock)
    assert not any(n.startswith("log4j-slf4j2-impl-") for n in lock)
    compose = yaml.safe_load((REPO / "deploy" / "docker-compose.yml").read_text())
    assert compose["services"]["kafka"]["image"] == f"apache/kafka:{version}"
    values = yaml.safe_load((REPO / "helm" / "ragline" / "values.yaml").read_text())
    assert values["kafka"]["version"] == version


def test_a_single_node_gets_internal_topics_it_can_serve(tmp_path: Path) -> None:
    layout = KafkaLayout.resolve(tmp_path, "127.0.0.1:19500", None)
    [node] = layout.nodes
    props = _props(server_properties(layout, node, BrokerTuning()))
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == f"1@127.0.0.1:{node.controller_port}"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19500"
    assert props["auto.create.topics.enable"] == "false"
    assert props["log.dirs"] == str(tmp_path / "node-1" / "data")
    # with Kafka's default RF 3 a single broker never gets a group coordinator
    for key in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor"):
        assert props[key] == "1"
    assert props["min.insync.replicas"] == "1"
    assert props["group.initial.rebalance.delay.ms"] == "0"


def test_three_nodes_replicate_three_times_and_need_two_in_sync(tmp_path: Path) -> None:
    layout = KafkaLayout.resolve(tmp_path, "127.0.0.1:19500", 3)
    assert [n.node_id for n in layout.nodes] == [1, 2, 3]
    ports = {n.port for n in layout.nodes} | {n.controller_port for n in layout.nodes}
    assert len(ports) == 6  # every listener its own port
    for node in layout.nodes:
        props = _props(server_properties(layout, node, BrokerTuning()))
        assert props["node.id"] == str(node.node_id)
        assert props["controller.quorum.voters"] == layout.voters
        assert props["offsets.topic.replication.factor"] == "3"
        assert props["default.replication.factor"] == "3"
        assert props["min.insync.replicas"] == "2"
        assert props["unclean.leader.election.enable"] == "false"
    assert default_replication_factor(3) == 3
    assert TopicSettings().min_isr(default_replication_factor(3)) == 2
    assert default_replication_factor(1) == 1 and default_replication_factor(7) == 3


def test_the_layout_is_kept_and_a_resize_refused(tmp_path: Path) -> None:
    first = KafkaLayout.resolve(tmp_path, "127.0.0.1:19500", 3)
    first.save()
    # the client port follows the settings; cluster id and controller ports never move
    again = KafkaLayout.resolve(tmp_path, "127.0.0.1:19600", None)
    assert again.cluster_id == first.cluster_id and len(again.cluster_id) == 22
    assert [n.controller_port for n in again.nodes] == [n.controller_port for n in first.nodes]
    assert again.nodes[0].port == 19600 and again.nodes[1].port == first.nodes[1].port
    with pytest.raises(StackError, match="3-broker cluster, 1 asked"):
        KafkaLayout.resolve(tmp_path, "127.0.0.1:19500", 1)
