"""A real OpenSearch node for the tuners: the local stack's own (Maven-fetched 2.19.6
jars, ragline/platform/stack/opensearch.py) in a throw-away directory on a free port,
stopped by ``close()``. Lucene's BM25 k1 / b are per-index settings there, so a grid
creates one index per pair (``mapping(k1, b)``)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any


def mapping(k1: float | None = None, b: float | None = None) -> dict[str, Any]:
    """The production index mapping with ``body``'s BM25 k1 / b replaced."""
    from ragline.store.os_index import chunk_mapping

    m = chunk_mapping()
    sim = next(iter(m["settings"]["similarity"].values()))
    if k1 is not None:
        sim["k1"] = k1
    if b is not None:
        sim["b"] = b
    return m


class OpenSearchNode:
    def __init__(self, url: str, server: Any, state: Path) -> None:
        self.url = url
        self._server = server
        self._state = state

    @classmethod
    def start(cls, heap_mb: int = 2048) -> OpenSearchNode:
        """A fresh node; ``close()`` it (it also exits with this process)."""
        from ragline.config import Settings
        from ragline.platform.stack.opensearch import LocalOpenSearch
        from ragline.platform.stack.testing import free_port

        state = Path(tempfile.mkdtemp(prefix="ragline-bench-os-"))
        url = f"http://127.0.0.1:{free_port()}"
        settings = Settings(opensearch_url=url, state_dir=state)
        server = LocalOpenSearch.standalone(settings, state, heap_mb=heap_mb)
        asyncio.run(server.start())
        return cls(url, server, state)

    def close(self) -> None:
        asyncio.run(self._server.stop())
        shutil.rmtree(self._state, ignore_errors=True)
