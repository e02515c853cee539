"""A consumer's /healthz and /readyz follow its event loop's progress, while /metrics (the
same thread-served port) keeps answering: a blocked loop or a hung handler fails the
probe, which /metrics never did."""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from ragline.platform.stack.testing import free_port
from ragline.runtime.health import ConsumerHealth
from ragline.runtime.metrics import serve_metrics


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_states_with_a_fake_clock() -> None:
    clock = _Clock()
    h = ConsumerHealth(loop_stall_s=30, handler_timeout_s=600, clock=clock)
    assert not h.live().ok and h.live().reason == "event loop not started"
    h.beat()
    assert h.live().ok and not h.ready().ok  # live, not consuming yet
    h.consuming(True)
    assert h.ready().ok
    clock.now += 31  # no beat for 31 s: the loop is blocked
    assert not h.live().ok and "blocked" in h.live().reason and not h.ready().ok
    h.beat()
    h.handling()
    h.handling()  # a batch overlapping another message: the oldest start counts
    clock.now += 500
    h.beat()
    h.handled()
    assert h.live().ok
    clock.now += 101
    h.beat()
    assert not h.live().ok and "handler stuck" in h.live().reason
    h.handled()
    assert h.live().ok and h.ready().ok
    h.handled()  # never negative
    # the two lanes' handlers overlap in a chain: the one still running counts, never
    # the start of one that has finished
    first = h.handling()
    clock.now += 500
    h.beat()
    second = h.handling()
    h.handled(first)
    clock.now += 500
    h.beat()
    assert h.live().ok  # second has run 500 s, not 1000
    clock.now += 101
    h.beat()
    assert not h.live().ok
    h.handled(second)
    assert h.live().ok
    h.consuming(False)
    assert h.live().ok and not h.ready().ok


@pytest.fixture
def served() -> Iterator[tuple[int, ConsumerHealth]]:
    port = free_port()
    health = ConsumerHealth(loop_stall_s=0.5, beat_s=0.05)
    server = serve_metrics(port, "127.0.0.1", health)
    yield port, health
    server.shutdown()
    server.server_close()


def test_blocked_event_loop_fails_the_probe_not_the_metrics(
    served: tuple[int, ConsumerHealth],
) -> None:
    port, health = served

    async def scenario() -> list[tuple[int, str]]:
        beat = asyncio.create_task(health.run())
        health.consuming(True)
        await asyncio.sleep(0.2)
        seen = [await asyncio.to_thread(_get, port, "/healthz")]
        seen.append(await asyncio.to_thread(_get, port, "/readyz"))
        # a sync call blocks the loop: the probe thread must see it stop beating
        time.sleep(1.0)
        seen.append(_get(port, "/healthz"))
        seen.append(_get(port, "/metrics"))
        seen.append(_get(port, "/readyz"))
        await asyncio.sleep(0.2)  # the loop runs again
        seen.append(await asyncio.to_thread(_get, port, "/healthz"))
        beat.cancel()
        return seen

    ok, ready, blocked, metrics, not_ready, recovered = asyncio.run(scenario())
    assert ok == (200, "ok") and ready == (200, "ok")
    assert blocked[0] == 503 and "event loop blocked" in blocked[1]
    assert metrics[0] == 200 and "ragline_service_up" in metrics[1]
    assert not_ready[0] == 503
    assert recovered == (200, "ok")


def test_without_health_every_path_is_metrics() -> None:
    port = free_port()
    server = serve_metrics(port, "127.0.0.1")
    try:
        status, body = _get(port, "/healthz")
        assert status == 200 and "ragline_messages_consumed_total" in body
    finally:
        server.shutdown()
        server.server_close()


async def test_ready_says_broker_unreachable_while_no_bootstrap_address_answers() -> None:
    import socket

    from ragline.runtime.health import watch_broker

    h = ConsumerHealth()
    h.beat()
    h.consuming(True)
    assert h.ready().ok
    dead = free_port()
    with socket.socket() as listening:  # one address of two answers: reachable
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        alive = listening.getsockname()[1]
        task = asyncio.create_task(
            watch_broker(h, f"127.0.0.1:{dead},127.0.0.1:{alive}", interval_s=0.05)
        )
        await asyncio.sleep(0.3)
        assert h.ready().ok, h.ready()
        task.cancel()
    task = asyncio.create_task(watch_broker(h, f"127.0.0.1:{dead}", interval_s=0.05))
    await asyncio.sleep(0.3)
    task.cancel()
    report = h.ready()
    assert not report.ok and report.reason == "broker unreachable"
    assert h.live().ok  # a broker outage is no reason to restart the consumer
