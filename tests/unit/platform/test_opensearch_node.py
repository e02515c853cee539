"""The local OpenSearch node's launch description: settings under the state directory,
loopback only, one node; the JVM flags; the engine files shipped with the package."""

from __future__ import annotations

from pathlib import Path

from ragline.platform.stack.engines import engine, read_lock
from ragline.platform.stack.opensearch import NodeLayout, jvm_options, node_settings


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
