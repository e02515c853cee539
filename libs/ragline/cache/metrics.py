"""Answer cache metrics (module level, registered once). Labels are bounded reason codes;
never tenants, scopes or query text. Hit rate = hits / (hits + misses)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "ENTRIES",
    "EVICTIONS",
    "HITS",
    "INVALIDATIONS",
    "INVALIDATION_LAG",
    "LOOKUP_SECONDS",
    "MISSES",
    "STORES",
]

HITS = Counter("ragline_cache_hits_total", "Answer cache hits", ["mode"])
MISSES = Counter(
    "ragline_cache_misses_total",
    "Answer cache misses (none: no entry; stale: entry failed the freshness check; "
    "error: lookup failed or timed out)",
    ["mode", "reason"],
)
STORES = Counter(
    "ragline_cache_stores_total",
    "Store attempts (stored, fenced: an invalidation overtook the search, too_big, "
    "no_snapshot, error)",
    ["outcome"],
)
LOOKUP_SECONDS = Histogram(
    "ragline_cache_lookup_seconds",
    "Cache lookup latency",
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5),
)
ENTRIES = Gauge("ragline_cache_entries", "Entries in the answer cache (set by the sweeper)")
EVICTIONS = Counter(
    "ragline_cache_evictions_total",
    "Evicted entries by reason (upsert, delete, acl, ttl, size, flush)",
    ["reason"],
)
INVALIDATIONS = Counter(
    "ragline_cache_invalidations_total",
    "doc.indexed events handled (applied or skipped)",
    ["action", "result"],
)
INVALIDATION_LAG = Histogram(
    "ragline_cache_invalidation_lag_seconds",
    "Source change (source_event_at) -> cache eviction committed",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900),
)
