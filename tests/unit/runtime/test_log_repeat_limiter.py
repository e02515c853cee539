"""While the broker is away aiokafka logs "Unable to update metadata" thousands of times a
minute (issue 29): the services' log handler lets one such line through per 30 s window,
and the next one says how many were held back; other loggers are never limited."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from ragline.runtime.logs import RepeatLimiter, configure_logging


@pytest.fixture
def limiter() -> Iterator[tuple[RepeatLimiter, io.StringIO]]:
    """The filter of the handler `configure_logging` installs, and what it writes."""
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    configure_logging("connector")
    (handler,) = root.handlers
    assert isinstance(handler, logging.StreamHandler)
    out = io.StringIO()
    handler.setStream(out)
    (lim,) = [f for f in handler.filters if isinstance(f, RepeatLimiter)]
    yield lim, out
    root.handlers[:] = saved
    root.setLevel(level)


def test_a_broker_outage_is_a_few_lines_with_counts(
    limiter: tuple[RepeatLimiter, io.StringIO],
) -> None:
    lim, written = limiter
    now = [1000.0]
    lim.clock = lambda: now[0]
    aiokafka = logging.getLogger("aiokafka.client")
    ours = logging.getLogger("ragline.connector")
    for i in range(3000):  # 50 per second for a minute, as measured while a broker was away
        aiokafka.error("Unable to update metadata from %s", [1])
        if i % 1000 == 0:
            aiokafka.error("Unable connect to node with id %s", 1)
            ours.warning("broker unreachable")
        now[0] += 0.02
    now[0] += 1.0
    aiokafka.error("Unable to update metadata from %s", [1])  # after the minute
    lines = [json.loads(x) for x in written.getvalue().splitlines()]
    metadata = [x for x in lines if x["msg"].startswith("Unable to update metadata")]
    assert 2 <= len(metadata) <= 4
    assert sum(x.get("suppressed", 0) for x in metadata) + len(metadata) == 3001
    assert "more like this in the last" in metadata[-1]["msg"]
    # another template of the same library is limited on its own; our loggers never
    assert len([x for x in lines if x["msg"].startswith("Unable connect")]) == 2
    assert len([x for x in lines if x["logger"] == "ragline.connector"]) == 3
