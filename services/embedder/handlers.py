"""Embedder service wiring: doc.enriched -> doc.embedded (logic: ragline.embedding)."""

from __future__ import annotations

from typing import Any

from ragline.config import Settings
from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.stage import EmbedderStage
from ragline.runtime.lanes import LaneSettings
from ragline.runtime.stage import Stage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    return EmbedderStage(settings, EmbedderSettings(), lanes=LaneSettings())
