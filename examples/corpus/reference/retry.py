"""Client-side retry helper for the Acme Gateway API."""

import random
import time


def backoff_delays(attempts: int, base: float = 0.5, cap: float = 30.0) -> list[float]:
    """Exponential backoff with full jitter, as recommended for GW-5031 timeouts."""
    return [random.uniform(0, min(cap, base * 2**i)) for i in range(attempts)]


def call_with_retries(fn, attempts: int = 5):
    """Call fn until it succeeds or the attempts run out."""
    for delay in backoff_delays(attempts):
        try:
            return fn()
        except TimeoutError:
            time.sleep(delay)
    return fn()
