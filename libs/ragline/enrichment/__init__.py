"""Chunk enrichment: language, content type, entities, dates, contextual header,
provenance (docs/chunking.md, "The chunk record")."""

from ragline.enrichment.enricher import Enricher, classify_content
from ragline.enrichment.entities import extract_entities
from ragline.enrichment.header import build_header
from ragline.enrichment.language import detect_language
from ragline.enrichment.settings import EnricherSettings

__all__ = [
    "Enricher",
    "EnricherSettings",
    "build_header",
    "classify_content",
    "detect_language",
    "extract_entities",
]
