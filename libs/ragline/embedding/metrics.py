"""Embedder metrics (module level). ``source`` says where a child's vector came from."""

from __future__ import annotations

from prometheus_client import Counter, Histogram, Info

__all__ = [
    "BACKEND_INFO",
    "CACHE_ERRORS",
    "CHUNKS_EMBEDDED",
    "MODEL_BATCH_SIZE",
    "MODEL_SECONDS",
    "POLL_PHASE_SECONDS",
    "SLICES_HANDED_ON",
]

CHUNKS_EMBEDDED = Counter(
    "ragline_embedding_chunks_total",
    "Child chunks given a vector, by where it came from",
    ["source"],  # model | cache | dedup (same text elsewhere in the batch)
)
MODEL_SECONDS = Histogram(
    "ragline_embedding_model_seconds",
    "One model call (a batch of texts)",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)
MODEL_BATCH_SIZE = Histogram(
    "ragline_embedding_model_batch_texts",
    "Texts per model call",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
CACHE_ERRORS = Counter(
    "ragline_embedding_cache_errors_total",
    "Embedding cache reads/writes that failed (the embedder degrades to computing)",
    ["op"],
)
BACKEND_INFO = Info(
    "ragline_embedding_backend",
    "The embedding backend this replica runs (RAGLINE_EMBEDDER_BACKEND)",
)
SLICES_HANDED_ON = Counter(
    "ragline_embedding_slices_handed_on_total",
    "Documents handed on unfinished after a slice of their children (embedding/batcher.py)",
)
POLL_PHASE_SECONDS = Counter(
    "ragline_embedding_poll_phase_seconds_total",
    "Seconds of the embedder's poll handling per phase: cache_get, model (its calls, "
    "thread hand-off included), cache_put, build (the doc.embedded events), spaces "
    "(shadow-space feed); the rest of the consumer's wall is in ragline_stage_seconds_total",
    ["phase"],
)
