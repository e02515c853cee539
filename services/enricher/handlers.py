"""The enricher service: ``doc.chunked`` -> ``doc.enriched`` (logic in ragline.enrichment)."""

from __future__ import annotations

from typing import Any

from ragline.config import Settings
from ragline.enrichment.stage import EnricherStage
from ragline.runtime.stage import Stage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    return EnricherStage(settings)
