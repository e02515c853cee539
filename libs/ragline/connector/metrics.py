"""Connector metrics. Labels are bounded codes only: never document ids, paths or text."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = [
    "DECISIONS",
    "FETCH_BYTES",
    "FETCH_SECONDS",
    "FS_CHANGES",
    "FS_SKIPPED",
    "LANE_DEMOTIONS",
    "SYNC_ACTIONS",
    "WEBHOOK_REQUESTS",
]

DECISIONS = Counter(
    "ragline_connector_decisions_total",
    "What intake decided per source change (content, metadata, unchanged, stale, delete, acl)",
    ["decision"],
)
FETCH_SECONDS = Histogram(
    "ragline_connector_fetch_seconds",
    "Time to obtain a document's bytes",
    ["kind"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
FETCH_BYTES = Counter(
    "ragline_connector_fetched_bytes_total", "Bytes of documents obtained", ["kind"]
)
WEBHOOK_REQUESTS = Counter(
    "ragline_connector_webhook_requests_total", "Webhook requests by HTTP status", ["status"]
)
FS_CHANGES = Counter(
    "ragline_connector_fs_changes_total",
    "Changes the filesystem source published (upsert, delete, acl)",
    ["kind"],
)
FS_SKIPPED = Counter(
    "ragline_connector_fs_skipped_total",
    "Files the filesystem source skipped (invalid_meta, bad_path, unsettled, unreadable)",
    ["reason"],
)
SYNC_ACTIONS = Counter(
    "ragline_connector_sync_actions_total",
    "What `ragline sync` emitted (missing, stale, delete) or would have in --dry-run",
    ["action", "dry_run"],
)
LANE_DEMOTIONS = Counter(
    "ragline_connector_lane_demotions_total",
    "Interactive changes the connector sent on in the bulk lane, by reason (tenant_budget: "
    "over its tenant's interactive budget; heavy: content over HEAVY_BYTES) and where it "
    "decided (webhook, stage). Never per tenant: tenant ids are unbounded (the first "
    "demotion of a run is logged with the tenant id instead)",
    ["reason", "where"],
)
