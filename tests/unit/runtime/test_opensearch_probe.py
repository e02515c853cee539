"""The stack's OpenSearch probe: a refused connection is a Health, not a logged traceback."""

from __future__ import annotations

import logging
import socket

import pytest

from ragline.config import Settings
from ragline.platform.stack.opensearch import opensearch_probe


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_refused_probe_is_quiet(caplog: pytest.LogCaptureFixture) -> None:
    probe = opensearch_probe(Settings(opensearch_url=f"http://127.0.0.1:{_closed_port()}"))
    with caplog.at_level(logging.DEBUG, logger="opensearch"):
        health = await probe(1.0)
    assert not health.ok and health.detail == "opensearch: ConnectionError"
    assert not [
        r for r in caplog.records if r.name == "opensearch" and r.levelno >= logging.WARNING
    ]
    # other opensearch-py messages still get through
    logging.getLogger("opensearch").warning("GET /some-index/_search failed")
    assert [r for r in caplog.records if r.name == "opensearch"]
