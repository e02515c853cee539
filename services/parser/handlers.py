"""Parser service wiring: ``doc.fetched`` -> ``doc.parsed`` (logic: ragline.parsing)."""

from __future__ import annotations

from typing import Any

from ragline.config import Settings
from ragline.parsing.settings import ParserSettings
from ragline.parsing.stage import ParserStage
from ragline.runtime.stage import Stage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    return ParserStage(settings, ParserSettings())
