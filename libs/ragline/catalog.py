"""The one list of ragline's services and their default ports.

Standard library only and importing nothing of ragline's: the container health probe
(``ops.healthcheck``) reads it in milliseconds, the runtime (``ragline run``, ``up``)
assigns ports from it, and a unit test keeps the ``ragline.services`` entry points, the
topology and the deployment files in step with it. The order is the pipeline's; a
service's default metrics port is ``METRICS_BASE_PORT`` plus its index.
"""

from __future__ import annotations

__all__ = [
    "HTTP_PORTS",
    "HTTP_SERVICES",
    "METRICS_BASE_PORT",
    "SERVICES",
    "default_http_port",
    "default_metrics_port",
]

SERVICES: tuple[str, ...] = (
    "connector",
    "parser",
    "scanner",
    "chunker",
    "enricher",
    "embedder",
    "indexer",
    "cache_invalidator",
    "query",
)
METRICS_BASE_PORT = 9400
# services that serve HTTP by default (the connector's webhook, the query API)
HTTP_PORTS: dict[str, int] = {"query": 8080, "connector": 8081}
_OTHER_HTTP_BASE_PORT = 8090
# served by uvicorn alone: its /healthz is on the API port, not the metrics port
HTTP_SERVICES = frozenset({"query"})


def default_metrics_port(name: str) -> int:
    return METRICS_BASE_PORT + SERVICES.index(name)


def default_http_port(name: str) -> int:
    return HTTP_PORTS.get(name, _OTHER_HTTP_BASE_PORT + SERVICES.index(name))
