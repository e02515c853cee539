"""Enricher metrics (labels bounded: language codes, entity types, content types)."""

from __future__ import annotations

from prometheus_client import Counter

__all__ = ["CHUNKS", "ENTITIES"]

CHUNKS = Counter("ragline_enrichment_chunks_total", "Chunks enriched", ["language", "content_type"])
ENTITIES = Counter("ragline_enrichment_entities_total", "Entities extracted", ["type"])
