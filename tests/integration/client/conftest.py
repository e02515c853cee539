"""Fixtures of the ragline-client tests: a seeded corpus (the query tests' corpus, written
the way the indexer writes it) in a fresh tenant, and the query service as a real HTTP
server (``ragline run query``), shared by the client, framework and MCP tests.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "query"))

from client_helpers import REPO, Seeded, child_env
from query_corpus import main_corpus, seed_tenant
from query_helpers import GROUP_A, GROUP_B, SECRET

from ragline.config import EmbeddingModelSettings, Settings
from ragline.platform.stack.testing import ServiceProcess, free_port, unique_tenant
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def seeded(stack: Settings) -> Seeded:
    inner = await ModelQueryEmbedder.load(EmbeddingModelSettings())
    embedder = CachedEmbedder(inner, size=1024)
    tenant = unique_tenant("cl")
    docs = main_corpus(GROUP_A, GROUP_B)
    try:
        await seed_tenant(stack, tenant, docs, embedder, name="client-seed")
    finally:
        inner.close()
    return Seeded(
        tenant=tenant,
        visible_a=frozenset(d.document_id for d in docs if GROUP_A in d.groups),
        visible_b=frozenset(d.document_id for d in docs if GROUP_B in d.groups),
    )


@pytest.fixture(scope="session")
def query_url(stack: Settings, seeded: Seeded) -> Iterator[str]:
    """``ragline run query`` on a free port (rate limit off), for the whole session."""
    logs = Path(tempfile.mkdtemp(prefix="ragline-client-query-"))
    for attempt in range(3):
        proc = ServiceProcess(
            "query",
            env=child_env(RAGLINE_QUERY_JWT_SECRET=SECRET, RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE="0"),
            log_path=logs / f"query-{attempt}.log",
            metrics_port=free_port(),
            http_port=free_port(),
            cwd=REPO,
        )
        try:
            proc.wait_ready(timeout_s=240)
            time.sleep(1.0)
            # on a busy shared machine another process may grab the free port first and
            # answer /readyz; ours then exits on the bind: only a live process counts
            if proc.running():
                break
        except RuntimeError:
            pass
        proc.cleanup()
    else:
        raise RuntimeError(f"the query service did not start; logs in {logs}")
    try:
        yield proc.http_url
    finally:
        proc.cleanup()


@pytest_asyncio.fixture(loop_scope="session")
async def aclient_factory() -> AsyncIterator[list[object]]:
    """Closes whatever async clients a test registers."""
    made: list[object] = []
    yield made
    for c in made:
        await c.aclose()  # type: ignore[attr-defined]
