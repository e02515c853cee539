"""Query service metrics (module level, registered once). Labels are bounded: stage,
mode, HTTP status class, reason codes; never tenants, subjects or query text."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = [
    "ABSTAINED",
    "DEGRADED",
    "EMBED_CACHE",
    "REQUESTS",
    "REQUEST_SECONDS",
    "RESULTS",
    "STAGE_SECONDS",
]

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

STAGE_SECONDS = Histogram(
    "ragline_query_stage_seconds", "Time per search stage", ["stage"], buckets=_BUCKETS
)
REQUEST_SECONDS = Histogram(
    "ragline_query_request_seconds", "Search request latency", ["mode"], buckets=_BUCKETS
)
REQUESTS = Counter(
    "ragline_query_requests_total", "Query API requests", ["route", "mode", "status"]
)
RESULTS = Histogram(
    "ragline_query_results_count",
    "Results returned per search",
    buckets=(0, 1, 3, 5, 10, 20, 50, 100),
)
ABSTAINED = Counter("ragline_query_abstained_total", "Searches that abstained", ["reason"])
DEGRADED = Counter("ragline_query_degraded_total", "Degraded searches", ["reason"])
EMBED_CACHE = Counter("ragline_query_embed_cache_total", "Query embedding cache", ["outcome"])
