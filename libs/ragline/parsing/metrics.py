"""Prometheus metrics of the parsing domain (recorded in the service process)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = [
    "HEAVY_DEMOTED",
    "HEAVY_DOCUMENTS",
    "PARSE_BYTES",
    "PARSE_DOCUMENTS",
    "PARSE_QUARANTINED",
    "PARSE_SECONDS",
    "PARSE_WORKER_RESTARTS",
]

PARSE_DOCUMENTS = Counter(
    "ragline_parsing_documents_total", "Documents parsed successfully", ["format"]
)
PARSE_BYTES = Counter(
    "ragline_parsing_input_bytes_total", "Raw bytes of successfully parsed documents", ["format"]
)
PARSE_QUARANTINED = Counter(
    "ragline_parsing_quarantined_total", "Documents rejected by the parser", ["reason_code"]
)
PARSE_SECONDS = Histogram(
    "ragline_parsing_duration_seconds",
    "Wall time to parse one document (queueing in the worker pool included)",
    ["format"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
PARSE_WORKER_RESTARTS = Counter(
    "ragline_parsing_worker_restarts_total", "Parser process pools killed after a timeout"
)

HEAVY_DOCUMENTS = Counter(
    "ragline_parsing_heavy_documents_total",
    "Documents above RAGLINE_PARSER_HEAVY_BYTES, parsed in a process of their own",
)
HEAVY_DEMOTED = Counter(
    "ragline_parsing_heavy_demoted_total",
    "Interactive documents heavy once parsed (RAGLINE_PARSER_HEAVY_*), sent on in the bulk "
    "lane; one count per measure over its threshold",
    ["measure"],
)
