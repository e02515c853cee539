"""Embedder: child chunks to normalized vectors, micro-batched across documents, cached."""
