"""Secrets, PII and prompt-injection scanning: nothing reaches an index unscanned.

``Scanner`` turns a ``DocParsed`` into a ``DocScanned`` (or raises ``ScanBlocked``);
``build_scanner`` wires one from ``ScannerSettings``. See docs/scanning.md.
"""

from __future__ import annotations

from ragline.scanning.factory import build_scanner
from ragline.scanning.policy import EffectivePolicy, PolicyContext, PolicySet
from ragline.scanning.scanner import SCANNER_VERSION, ScanBlocked, Scanner, apply_scan
from ragline.scanning.settings import ScannerSettings

__all__ = [
    "SCANNER_VERSION",
    "EffectivePolicy",
    "PolicyContext",
    "PolicySet",
    "ScanBlocked",
    "Scanner",
    "ScannerSettings",
    "apply_scan",
    "build_scanner",
]
