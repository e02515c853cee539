"""Connector service wiring: ``source.changes`` -> ``doc.fetched`` / ``doc.control``, and
the webhook (``POST /v1/changes``) served by the same process. Logic: ragline.connector."""

from __future__ import annotations

from typing import Any

from ragline.config import Settings
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage
from ragline.runtime.stage import Stage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    return ConnectorStage(settings, ConnectorSettings())
