"""Chunker metrics (labels are bounded: level and content type only)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = ["CHILD_TOKENS", "CHUNKS", "CHUNK_SECONDS", "HEAVY_DOCUMENTS", "QUARANTINED", "REROUTED"]

CHUNKS = Counter("ragline_chunking_chunks_total", "Chunks produced", ["level", "content_type"])
CHILD_TOKENS = Histogram(
    "ragline_chunking_child_tokens",
    "Word pieces per child chunk (embedding-model tokenizer, no special tokens)",
    buckets=(16, 32, 64, 96, 128, 160, 192, 224, 256),
)
CHUNK_SECONDS = Histogram(
    "ragline_chunking_document_seconds",
    "Wall time to chunk one document (a heavy one: in its own process, start included)",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300),
)
HEAVY_DOCUMENTS = Counter(
    "ragline_chunking_heavy_documents_total",
    "Documents over a RAGLINE_CHUNKER_HEAVY_* threshold, chunked in a process of their own",
)
QUARANTINED = Counter(
    "ragline_chunking_quarantined_total",
    "Heavy documents the chunker gave up on (chunk_timeout, resource_limit, too_heavy)",
    ["reason_code"],
)
REROUTED = Counter(
    "ragline_chunking_heavy_rerouted_total",
    "Heavy documents that arrived on the interactive lane, sent on to doc.scanned.bulk",
)
