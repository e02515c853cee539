"""Liveness and readiness of a consumer, as its event loop sees them.

The /metrics endpoint is served by a thread, so it answers even when the consumer's event
loop is blocked or a handler hangs forever: a probe on /metrics keeps a wedged pod
"live". The probes read this object instead, which only the event loop updates:

- the loop beats every ``beat_s``; a beat older than ``loop_stall_s`` means the loop is
  blocked (a sync call, a CPU-bound handler, a deadlock): not live;
- a message (or batch) in the handler for longer than ``handler_timeout_s`` means the
  consumer stopped making progress (a hung await): not live;
- ready only while the consumer is started and not stopping (and live), and while some
  Kafka bootstrap address answers (``watch_broker``): "broker unreachable" otherwise.
  A broker outage never makes a consumer un-live: restarting it would not help.

Thread-safe by construction: the probe thread only reads floats and a bool.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ConsumerHealth", "HealthReport", "tcp_answers", "watch_broker"]

# the words an operator greps for (also kafka_errors.BROKER_UNREACHABLE)
_BROKER_UNREACHABLE = "broker unreachable"


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
    _broker_ok: bool = field(default=True, init=False)

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

    def broker(self, reachable: bool) -> None:
        self._broker_ok = reachable

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
        if not self._broker_ok:
            return HealthReport(ok=False, reason=_BROKER_UNREACHABLE)
        if not self._consuming:
            return HealthReport(ok=False, reason="not consuming")
        return HealthReport(ok=True, reason="ok")


async def tcp_answers(host: str, port: int, timeout_s: float) -> str | None:
    """None when ``host:port`` accepts a TCP connection, else why not (one line)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, TimeoutError) as exc:
        return f"no TCP answer at {host}:{port} ({type(exc).__name__})"
    writer.close()
    await writer.wait_closed()
    return None


async def watch_broker(
    health: ConsumerHealth, bootstrap: str, *, interval_s: float = 5.0, timeout_s: float = 2.0
) -> None:
    """Until cancelled: ``health.broker(...)`` is whether any bootstrap address accepts a
    connection (aiokafka reconnects by itself; this only tells the probes and the
    operator why nothing moves)."""
    addresses = []
    for part in bootstrap.split(","):
        host, _, port = part.strip().rpartition(":")
        if port.isdigit():
            addresses.append((host.strip("[]"), int(port)))
    while True:
        answers = [await tcp_answers(h, p, timeout_s) for h, p in addresses]
        health.broker(not addresses or any(a is None for a in answers))
        await asyncio.sleep(interval_s)
