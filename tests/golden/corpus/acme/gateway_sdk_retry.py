"""Retry policy of the Acme Gateway Python SDK.

Calls through the gateway are retried with capped exponential backoff and full jitter,
within a retry budget so that a struggling upstream is not hammered by retries.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

MAX_RETRY_ATTEMPTS = 5
"""Attempts per call, including the first one."""

RETRYABLE_STATUS = frozenset({429, 502, 503, 504})

RETRYABLE_ERROR_CODES = frozenset({"AGW-4080", "AGW-4290", "AGW-5031", "AGW-5120"})
"""Gateway error codes worth retrying. AGW-4031 (certificate pin mismatch) is NOT
retryable: it needs an operator to refresh the pins."""


def compute_backoff(attempt: int, base_ms: int = 200, cap_ms: int = 10_000) -> float:
    """Seconds to sleep before retry number ``attempt`` (1-based).

    Full jitter: a uniform draw between zero and min(cap, base * 2 ** attempt).
    """
    ceiling = min(cap_ms, base_ms * 2**attempt)
    return random.uniform(0, ceiling) / 1000.0


def is_retryable(status: int, error_code: str | None) -> bool:
    if error_code is not None:
        return error_code in RETRYABLE_ERROR_CODES
    return status in RETRYABLE_STATUS


@dataclass
class RetryBudget:
    """Allows retries only while they stay below ``ratio`` of recent first attempts.

    The budget refills over a sliding window of ``window_s`` seconds; with the default
    ratio of 0.2 at most one retry is sent for every five original calls.
    """

    ratio: float = 0.2
    window_s: float = 10.0
    _calls: int = 0
    _retries: int = 0
    _window_start: float = 0.0

    def _roll(self) -> None:
        now = time.monotonic()
        if now - self._window_start > self.window_s:
            self._window_start = now
            self._calls = 0
            self._retries = 0

    def record_call(self) -> None:
        self._roll()
        self._calls += 1

    def can_retry(self) -> bool:
        self._roll()
        return self._retries < max(1, int(self._calls * self.ratio))

    def record_retry(self) -> None:
        self._retries += 1
