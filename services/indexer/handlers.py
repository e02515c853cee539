"""Indexer service wiring: doc.embedded / doc.control / doc.quarantined -> Postgres +
OpenSearch -> doc.indexed (logic: ragline.indexing)."""

from __future__ import annotations

from typing import Any

from ragline.config import Settings
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.runtime.stage import Stage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    return IndexerStage(settings, IndexerSettings())
