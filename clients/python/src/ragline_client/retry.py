"""Retries with backoff that honour ``Retry-After`` (429/503), and the delay arithmetic.

Pure functions and a frozen policy: the clients ask ``policy.delay(...)`` after every
failed attempt and sleep that long, or give up when it says ``None``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["RetryPolicy", "parse_retry_after"]

_MAX_SECONDS = 365 * 24 * 3600.0  # anything longer is nonsense: treat as "a year"
# delta-seconds (RFC 9110), leniently with a fraction; ASCII digits only (not "١٢")
_DELTA = re.compile(r"[0-9]+(?:\.[0-9]+)?", re.ASCII)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait per a ``Retry-After`` header (delta-seconds or an HTTP-date);
    None when absent or unreadable. Never negative, never infinite."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if _DELTA.fullmatch(text):
        whole, _, frac = text.partition(".")
        if len(whole) > 12:
            return _MAX_SECONDS
        return min(float(f"{whole}.{frac or 0}"), _MAX_SECONDS)
    if not text.isascii():
        return None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = (when - (now or datetime.now(UTC))).total_seconds()
    return min(max(delta, 0.0), _MAX_SECONDS)


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` counts every try (1 = no retry). Backoff is exponential with jitter,
    capped at ``max_backoff_s``; a ``Retry-After`` of a 429/503 replaces it, unless it is
    longer than ``max_retry_after_s``, in which case the client gives up at once and the
    error carries ``retry_after`` (waiting less than asked would only be refused again)."""

    attempts: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    max_retry_after_s: float = 30.0
    statuses: frozenset[int] = field(default_factory=lambda: frozenset({429, 502, 503, 504}))
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be >= 1")
        if self.backoff_s < 0 or self.max_backoff_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("delays must be >= 0")

    def backoff(self, attempt: int) -> float:
        """The pause after failed attempt number ``attempt`` (0-based), without a hint."""
        base = min(self.max_backoff_s, self.backoff_s * 2.0 ** min(attempt, 60))
        return base / 2 + random.uniform(0, base / 2) if self.jitter else base

    def delay(self, attempt: int, status: int | None, retry_after: float | None) -> float | None:
        """How long to wait before the next attempt, or None to give up now.

        ``status`` None means a transport failure (connection refused, timeout)."""
        if attempt + 1 >= self.attempts:
            return None
        if status is not None and status not in self.statuses:
            return None
        if retry_after is not None and status in (429, 503):
            return retry_after if retry_after <= self.max_retry_after_s else None
        return self.backoff(attempt)


NO_RETRY = RetryPolicy(attempts=1)
