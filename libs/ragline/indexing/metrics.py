"""Indexer and repair metrics (module level; labels are bounded: action, result, class)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "CHUNKS_WRITTEN",
    "DOCUMENTS_APPLIED",
    "OS_LAGGING",
    "OS_SYNC_FAILURES",
    "OS_SYNC_SECONDS",
    "PG_WRITE_SECONDS",
]

DOCUMENTS_APPLIED = Counter(
    "ragline_indexing_documents_total",
    "Events applied to Postgres by the indexer",
    ["action", "result"],  # result: applied | skipped | replayed | stale_epoch
)
CHUNKS_WRITTEN = Counter("ragline_indexing_chunks_written_total", "Chunk rows written to Postgres")
PG_WRITE_SECONDS = Histogram(
    "ragline_indexing_pg_write_seconds",
    "One document's Postgres transaction",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
OS_SYNC_SECONDS = Histogram(
    "ragline_indexing_os_sync_seconds",
    "One batch's OpenSearch projection (bulk + stale deletes)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
OS_SYNC_FAILURES = Counter(
    "ragline_indexing_os_sync_failures_total",
    "OpenSearch syncs that failed after Postgres committed (repair pending)",
    ["error_class"],
)
OS_LAGGING = Gauge(
    "ragline_indexing_os_lagging_documents",
    "Documents whose OpenSearch copy lags Postgres (as last seen by repair)",
)
