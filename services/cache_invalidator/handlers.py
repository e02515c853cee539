"""Cache invalidator wiring: doc.indexed -> evict dependent answer-cache entries
(logic: ragline.cache)."""

from __future__ import annotations

from typing import Any

from ragline.cache.settings import CacheSettings
from ragline.cache.stage import CacheInvalidatorStage
from ragline.config import Settings
from ragline.runtime.stage import Stage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    return CacheInvalidatorStage(settings, CacheSettings())
