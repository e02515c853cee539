"""W3C trace context carried in Kafka headers (``traceparent``)."""

from __future__ import annotations

import re
import secrets

__all__ = ["TRACE_HEADER", "child_traceparent", "new_traceparent", "valid_traceparent"]

TRACE_HEADER = "traceparent"
_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def new_traceparent() -> str:
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def valid_traceparent(value: str | None) -> bool:
    return bool(value and _RE.match(value))


def child_traceparent(parent: str | None) -> str:
    """Same trace id, new span id; a fresh trace when the parent is missing or malformed."""
    m = _RE.match(parent or "")
    if not m:
        return new_traceparent()
    return f"00-{m.group(1)}-{secrets.token_hex(8)}-{m.group(3)}"
