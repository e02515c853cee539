"""Chunker metrics (labels are bounded: level and content type only)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = ["CHILD_TOKENS", "CHUNKS", "CHUNK_SECONDS"]

CHUNKS = Counter("ragline_chunking_chunks_total", "Chunks produced", ["level", "content_type"])
CHILD_TOKENS = Histogram(
    "ragline_chunking_child_tokens",
    "Word pieces per child chunk (embedding-model tokenizer, no special tokens)",
    buckets=(16, 32, 64, 96, 128, 160, 192, 224, 256),
)
CHUNK_SECONDS = Histogram(
    "ragline_chunking_document_seconds",
    "CPU time to chunk one document",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
