"""A per-principal token bucket (per replica): protects the backends from one noisy client.

Replicas do not share buckets, so the effective limit behind a load balancer is the
configured rate times the replica count; the gateway is the place for a global quota.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from ragline.errors import RaglineError

__all__ = ["RateLimited", "TokenBuckets"]


class RateLimited(RaglineError):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__("rate limit exceeded")
        self.retry_after_s = retry_after_s


class TokenBuckets:
    def __init__(
        self,
        *,
        per_minute: int,
        burst: int,
        max_keys: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate = per_minute / 60.0
        self._burst = float(burst)
        self._max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self._rate > 0

    def take(self, key: str) -> None:
        """Spend one token for ``key`` or raise ``RateLimited``."""
        if not self.enabled:
            return
        now = self._clock()
        tokens, last = self._buckets.get(key, (self._burst, now))
        tokens = min(self._burst, tokens + (now - last) * self._rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            raise RateLimited((1.0 - tokens) / self._rate)
        self._buckets[key] = (tokens - 1.0, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)
