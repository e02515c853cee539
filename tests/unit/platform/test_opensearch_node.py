"""The local OpenSearch node's launch description: settings under the state directory,
loopback only, one node; the JVM flags; the engine files shipped with the package."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.platform.stack.engines import engine, read_lock
from ragline.platform.stack.errors import StackError
from ragline.platform.stack.opensearch import ClusterLayout, NodeLayout, jvm_options, node_settings


def test_node_settings_keep_everything_under_the_state_dir(tmp_path: Path) -> None:
    layout = NodeLayout(root=tmp_path / "opensearch")
    s = node_settings(layout, host="127.0.0.1", http_port=19200)
    for key in ("path.home", "path.data", "path.logs"):
        assert Path(s[key]).is_relative_to(tmp_path / "opensearch" / "node-1")
    assert s["discovery.type"] == "single-node" and s["network.host"] == "127.0.0.1"
    assert s["http.port"] == "19200" and s["transport.port"] == "0"


def test_jvm_options_heap_and_parent_watch(tmp_path: Path) -> None:
    opts = jvm_options(1024, log4j=tmp_path / "log4j2.xml", parent_pid=42)
    assert "-Xms512m" in opts and "-Xmx1024m" in opts and "-Dragline.parent.pid=42" in opts
    small = jvm_options(256, log4j=tmp_path / "log4j2.xml", parent_pid=None)
    assert "-Xms256m" in small and not any("parent.pid" in o for o in small)


def test_the_engine_is_pinned_and_locked() -> None:
    eng = engine("opensearch")
    assert eng.version == "2.19.6"
    lock = read_lock(eng.lock)
    assert "opensearch-2.19.6.jar" in lock and "reindex-client-2.19.6.jar" in lock
    assert sum(n.startswith("lucene-core-") for n in lock) == 1  # one Lucene
    assert sum(n.startswith("log4j-core-") for n in lock) == 1  # one log4j backend
    assert eng.resource("Launcher.java").is_file() and eng.resource("log4j2.xml").is_file()


def test_a_cluster_names_its_peers_and_keeps_its_ports(tmp_path: Path) -> None:
    root = tmp_path / "opensearch"
    layout = ClusterLayout.resolve(root, [("127.0.0.1", 19201)], 3)
    assert [n.name for n in layout.nodes] == ["node-1", "node-2", "node-3"]
    assert layout.nodes[0].http_port == 19201
    ports = [n.http_port for n in layout.nodes] + [n.transport_port for n in layout.nodes]
    assert len(set(ports)) == 6 and 0 not in ports
    node = NodeLayout(root=root, node_name="node-2")
    s = node_settings(
        node,
        host="127.0.0.1",
        http_port=layout.nodes[1].http_port,
        transport_port=layout.nodes[1].transport_port,
        cluster=layout,
    )
    assert "discovery.type" not in s and s["node.name"] == "node-2"
    assert s["discovery.seed_hosts"] == ",".join(
        f"127.0.0.1:{n.transport_port}" for n in layout.nodes
    )
    assert s["cluster.initial_cluster_manager_nodes"] == "node-1,node-2,node-3"
    assert s["transport.port"] == str(layout.nodes[1].transport_port)
    assert Path(s["path.data"]).is_relative_to(root / "node-2")
    # kept: a restart finds every peer where it was; node 1 follows the URL
    layout.save()
    again = ClusterLayout.resolve(root, [("127.0.0.1", 19300)], None)
    assert again.nodes[1:] == layout.nodes[1:] and again.nodes[0].http_port == 19300
    # the services' URL lists every node; given back as RAGLINE_OPENSEARCH_URL, it
    # resolves to the same cluster (node i at entry i)
    urls = again.urls.split(",")
    assert urls == [f"http://127.0.0.1:{n.http_port}" for n in again.nodes]
    wanted = [("127.0.0.1", n.http_port) for n in again.nodes]
    assert ClusterLayout.resolve(root, wanted, None) == again


def test_a_kept_cluster_of_another_size_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "opensearch"
    ClusterLayout.resolve(root, [("127.0.0.1", 19201)], 3).save()
    with pytest.raises(StackError, match="3-node"):
        ClusterLayout.resolve(root, [("127.0.0.1", 19201)], 1)
    single = tmp_path / "single"
    (single / "node-1" / "data").mkdir(parents=True)  # a one-node stack's data
    with pytest.raises(StackError, match="1-node"):
        ClusterLayout.resolve(single, [("127.0.0.1", 19201)], 3)
    assert len(ClusterLayout.resolve(single, [("127.0.0.1", 19201)], None).nodes) == 1


def test_the_services_get_every_node_of_a_local_cluster(tmp_path: Path) -> None:
    from ragline.config import Settings
    from ragline.platform.stack import StackManager, StackSettings
    from ragline.platform.stack.settings import Component

    settings = Settings(state_dir=tmp_path, opensearch_url="http://127.0.0.1:19201")
    only = frozenset({Component.OPENSEARCH})
    three = StackManager(settings, StackSettings(components=only, opensearch_nodes=3))
    urls = three.client_env()["RAGLINE_OPENSEARCH_URL"].split(",")
    assert len(set(urls)) == 3 and urls[0] == "http://127.0.0.1:19201"
    assert three.servers[Component.OPENSEARCH].address == ",".join(urls)  # stack status
    one = StackManager(
        settings.model_copy(update={"state_dir": tmp_path / "one"}), StackSettings(components=only)
    )
    assert one.client_env() == {}  # one node: the configured URL is the whole truth
