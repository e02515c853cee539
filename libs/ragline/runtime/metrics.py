"""Prometheus metrics every service exposes, and the /metrics endpoint.

Labels are stage, topic, error class and reason codes only: never document ids,
text, secrets or PII (label values are bounded and safe to publish). The stage label is
``stage``, never ``service``: Prometheus Operator sets ``service`` (the Kubernetes Service
of the target) and, without ``honorLabels``, renames a scraped ``service`` label to
``exported_service``, so rules selecting ``service="indexer"`` would never match.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from ragline.runtime.health import ConsumerHealth, HealthReport

__all__ = [
    "CONSUMED",
    "CONSUMER_LAG",
    "DLQ",
    "FAILED",
    "FRESHNESS",
    "HANDLER_SECONDS",
    "INFLIGHT",
    "LANE_BATCHES",
    "LANE_MESSAGES",
    "PRODUCED",
    "QUARANTINED",
    "RETRIES",
    "SERVICE_UP",
    "STAGE_SECONDS",
    "serve_metrics",
]

CONSUMED = Counter("ragline_messages_consumed_total", "Messages consumed", ["stage", "topic"])
PRODUCED = Counter("ragline_messages_produced_total", "Messages produced", ["stage", "topic"])
FAILED = Counter(
    "ragline_messages_failed_total",
    "Handler attempts that raised",
    ["stage", "topic", "error_class"],
)
RETRIES = Counter("ragline_retries_total", "Retried handler attempts", ["stage", "topic"])
DLQ = Counter(
    "ragline_dlq_messages_total", "Messages sent to a dead-letter topic", ["stage", "topic"]
)
QUARANTINED = Counter(
    "ragline_quarantined_total", "Documents quarantined", ["stage", "reason_code"]
)
HANDLER_SECONDS = Histogram(
    "ragline_handler_seconds",
    "Time to handle one message (or one batch) including publishing",
    ["stage", "topic"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
FRESHNESS = Histogram(
    "ragline_freshness_seconds",
    "Time from the source change event to this stage's output",
    ["stage"],
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800),
)
CONSUMER_LAG = Gauge(
    "ragline_consumer_lag_messages",
    "Messages behind the partition's high watermark",
    ["stage", "topic", "partition"],
)
# Where a consumer's wall time goes, per lane (each lane's consumer is sequential, so
# the phases of one lane add up to its wall time): ``handle`` the stage's own work,
# ``produce`` awaiting the broker's acknowledgement of its outputs, ``commit`` the offset
# commit, ``gate`` a bulk batch yielding to interactive work (runtime/lanes.py),
# ``idle`` between the end of one poll's handling and the next poll's arrival (fetch
# latency or nothing upstream). bench/freshness_bench.py --profile reads them.
STAGE_SECONDS = Counter(
    "ragline_stage_seconds_total",
    "Seconds of a stage's consumer per lane and phase (handle, produce, commit, gate, idle)",
    ["stage", "lane", "phase"],
)
LANE_MESSAGES = Counter(
    "ragline_lane_messages_total", "Records handled per lane", ["stage", "lane"]
)
LANE_BATCHES = Counter(
    "ragline_lane_batches_total", "Polls (one commit each) handled per lane", ["stage", "lane"]
)
INFLIGHT = Gauge("ragline_inflight_messages", "Messages being handled", ["stage"])
SERVICE_UP = Gauge("ragline_service_up", "1 while the service is consuming", ["stage"])


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Probes and scrapes every few seconds: no access log."""


def _app(health: ConsumerHealth | None) -> Callable[..., Iterable[bytes]]:
    metrics = make_wsgi_app()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if health is None or path not in ("/healthz", "/readyz"):
            return metrics(environ, start_response)  # type: ignore[no-any-return]
        report: HealthReport = health.live() if path == "/healthz" else health.ready()
        status = "200 OK" if report.ok else "503 Service Unavailable"
        body = report.reason.encode()
        start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]

    return app


def serve_metrics(
    port: int,
    addr: str = "0.0.0.0",  # noqa: S104 - pods expose it
    health: ConsumerHealth | None = None,
) -> WSGIServer:
    """Serve /metrics (and, given ``health``, the /healthz and /readyz probes of a
    consumer) from a background thread; returns the server (``shutdown()`` stops it)."""
    httpd = make_server(addr, port, _app(health), ThreadingWSGIServer, handler_class=_QuietHandler)
    threading.Thread(target=httpd.serve_forever, name="metrics", daemon=True).start()
    return httpd
