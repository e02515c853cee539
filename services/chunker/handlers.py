"""The chunker service: ``doc.scanned`` -> ``doc.chunked`` (logic in ragline.chunking)."""

from __future__ import annotations

from typing import Any

from ragline.chunking.config import ChunkerSettings
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.runtime.stage import Stage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    return ChunkerStage(settings, ChunkerSettings())
