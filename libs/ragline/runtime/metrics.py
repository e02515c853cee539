"""Prometheus metrics every service exposes, and the /metrics endpoint.

Labels are service, topic, error class and reason codes only: never document ids,
text, secrets or PII (label values are bounded and safe to publish).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

__all__ = [
    "CONSUMED",
    "CONSUMER_LAG",
    "DLQ",
    "FAILED",
    "FRESHNESS",
    "HANDLER_SECONDS",
    "INFLIGHT",
    "PRODUCED",
    "QUARANTINED",
    "RETRIES",
    "SERVICE_UP",
    "serve_metrics",
]

CONSUMED = Counter("ragline_messages_consumed_total", "Messages consumed", ["service", "topic"])
PRODUCED = Counter("ragline_messages_produced_total", "Messages produced", ["service", "topic"])
FAILED = Counter(
    "ragline_messages_failed_total",
    "Handler attempts that raised",
    ["service", "topic", "error_class"],
)
RETRIES = Counter("ragline_retries_total", "Retried handler attempts", ["service", "topic"])
DLQ = Counter(
    "ragline_dlq_messages_total", "Messages sent to a dead-letter topic", ["service", "topic"]
)
QUARANTINED = Counter(
    "ragline_quarantined_total", "Documents quarantined", ["service", "reason_code"]
)
HANDLER_SECONDS = Histogram(
    "ragline_handler_seconds",
    "Time to handle one message (or one batch) including publishing",
    ["service", "topic"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
FRESHNESS = Histogram(
    "ragline_freshness_seconds",
    "Time from the source change event to this stage's output",
    ["service"],
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800),
)
CONSUMER_LAG = Gauge(
    "ragline_consumer_lag_messages",
    "Messages behind the partition's high watermark",
    ["service", "topic", "partition"],
)
INFLIGHT = Gauge("ragline_inflight_messages", "Messages being handled", ["service"])
SERVICE_UP = Gauge("ragline_service_up", "1 while the service is consuming", ["service"])


def serve_metrics(port: int, addr: str = "0.0.0.0") -> None:  # noqa: S104 - pods expose it
    """Start the /metrics HTTP endpoint in a background thread."""
    start_http_server(port, addr=addr)
