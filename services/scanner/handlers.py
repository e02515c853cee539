"""Scanner service wiring: ``doc.parsed`` -> ``doc.scanned`` or quarantine.

Logic: ragline.scanning."""

from __future__ import annotations

from typing import Any

from ragline.config import Settings
from ragline.runtime.stage import Stage
from ragline.scanning.settings import ScannerSettings
from ragline.scanning.stage import ScannerStage

__all__ = ["build"]


def build(settings: Settings) -> Stage[Any, Any]:
    return ScannerStage(settings, ScannerSettings())
