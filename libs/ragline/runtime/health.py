"""Liveness and readiness of a consumer, as its event loop sees them.

The /metrics endpoint is served by a thread, so it answers even when the consumer's event
loop is blocked or a handler hangs forever: a probe on /metrics keeps a wedged pod
"live". The probes read this object instead, which only the event loop updates:

- the loop beats every ``beat_s``; a beat older than ``loop_stall_s`` means the loop is
  blocked (a sync call, a CPU-bound handler, a deadlock): not live;
- a message (or batch) in the handler for longer than ``handler_timeout_s`` means the
  consumer stopped making progress (a hung await): not live;
- ready only while the consumer is started and not stopping (and live).

Thread-safe by construction: the probe thread only reads floats and a bool.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ConsumerHealth", "HealthReport"]


@dataclass(frozen=True, kw_only=True)
class HealthReport:
    ok: bool
    reason: str


@dataclass(kw_only=True)
class ConsumerHealth:
    loop_stall_s: float = 30.0
    handler_timeout_s: float = 600.0
    beat_s: float = 1.0
    clock: Callable[[], float] = time.monotonic
    _beat: float | None = field(default=None, init=False)
    # start of each handler in flight (the two lanes' consumers overlap), by token
    _started: dict[int, float] = field(default_factory=dict, init=False)
    _next: int = field(default=0, init=False)
    _busy_since: float | None = field(default=None, init=False)
    _consuming: bool = field(default=False, init=False)

    # ------------------------------------------------------------------ event loop side
    def beat(self) -> None:
        self._beat = self.clock()

    async def run(self) -> None:
        """Beat until cancelled (a task of the consumer's event loop)."""
        while True:
            self.beat()
            await asyncio.sleep(self.beat_s)

    def consuming(self, on: bool) -> None:
        self._consuming = on

    def handling(self) -> int:
        """A handler starts; returns its token for ``handled``."""
        self._next += 1
        self._started[self._next] = self.clock()
        self._busy_since = min(self._started.values())
        return self._next

    def handled(self, token: int | None = None) -> None:
        """That handler (default: the oldest) is done: the oldest still running counts."""
        if token is None and self._started:
            token = min(self._started, key=self._started.__getitem__)
        if token is not None:
            self._started.pop(token, None)
        self._busy_since = min(self._started.values()) if self._started else None

    # ------------------------------------------------------------------ probe side
    def live(self) -> HealthReport:
        now = self.clock()
        beat = self._beat
        if beat is None:
            return HealthReport(ok=False, reason="event loop not started")
        if now - beat > self.loop_stall_s:
            return HealthReport(ok=False, reason=f"event loop blocked for {now - beat:.0f}s")
        since = self._busy_since
        if since is not None and now - since > self.handler_timeout_s:
            return HealthReport(ok=False, reason=f"handler stuck for {now - since:.0f}s")
        return HealthReport(ok=True, reason="ok")

    def ready(self) -> HealthReport:
        live = self.live()
        if not live.ok:
            return live
        if not self._consuming:
            return HealthReport(ok=False, reason="not consuming")
        return HealthReport(ok=True, reason="ok")
