"""The enricher service: ``doc.chunked`` -> ``doc.enriched`` (logic in ragline.enrichment)."""

from __future__ import annotations

from typing import Any

from ragline.chunking.config import ChunkerSettings
from ragline.config import Settings
from ragline.enrichment.settings import EnricherSettings
from ragline.enrichment.stage import EnricherStage
from ragline.runtime.stage import Stage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    # the chunker's settings, not only the shared tokenizer part: a header budget the
    # chunker would refuse fails here too, at start
    return EnricherStage(settings, ChunkerSettings(), EnricherSettings())
