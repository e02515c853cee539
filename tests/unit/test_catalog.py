"""``ragline.catalog``: the one list of services and ports, and everything kept in step
with it (entry points, topology, the runtime's ports, the health probe's imports)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

from ragline.catalog import HTTP_PORTS, SERVICES, default_http_port, default_metrics_port
from ragline.config import Settings
from ragline.runtime import service_main
from ragline.runtime.topology import TOPOLOGY


def test_entry_points_and_topology_follow_the_catalog() -> None:
    assert {ep.name for ep in entry_points(group="ragline.services")} == set(SERVICES)
    # every consumer in pipeline order; the query service consumes nothing
    assert tuple(t.name for t in TOPOLOGY) == SERVICES[:-1]
    assert len(set(SERVICES)) == len(SERVICES)


def test_ports_are_distinct_and_the_runtime_uses_them() -> None:
    defaults = Settings(metrics_port=None, http_port=None)
    metrics = [default_metrics_port(n) for n in SERVICES]
    http = [default_http_port(n) for n in SERVICES]
    assert len(set(metrics)) == len(metrics) and len(set(http)) == len(http)
    assert not set(metrics) & set(http)
    for name in SERVICES:
        assert service_main.metrics_port(name, defaults) == default_metrics_port(name)
        assert service_main.http_port(name, defaults) == default_http_port(name)
    assert default_http_port("query") == HTTP_PORTS["query"] == 8080
    assert default_metrics_port("connector") == 9400


def test_the_health_probe_imports_nothing_heavy() -> None:
    """The Dockerfile HEALTHCHECK runs every few seconds: stdlib and the catalog only."""
    code = (
        "import sys, ragline.ops.healthcheck; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('ragline', 'pydantic')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(out.stdout.split()) == {
        "ragline",
        "ragline.catalog",
        "ragline.ops",
        "ragline.ops.healthcheck",
    }
