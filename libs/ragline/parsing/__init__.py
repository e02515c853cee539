"""Parsing: every supported format into one normalized ``ParsedDocument``.

``parse_document(bytes, meta, settings)`` is the synchronous entry point;
``ParseExecutor`` runs it off the event loop with timeouts and metrics.
"""

from __future__ import annotations

from .detect import Detected, Format, detect_format
from .dispatcher import parse_document
from .executor import ParseExecutor
from .limits import decode_payload
from .settings import ParserSettings

__all__ = [
    "Detected",
    "Format",
    "ParseExecutor",
    "ParserSettings",
    "decode_payload",
    "detect_format",
    "parse_document",
]
