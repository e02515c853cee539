"""Embedding-space fixtures. The live space is per install, so every test here gets its
own database on the session's Postgres server (an install of its own): flips and
backfills never touch what the other suites see."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from psycopg_pool import AsyncConnectionPool

from ragline.config import Settings
from ragline.embedding.model import Embedder, load_embedder
from ragline.embedding.settings import EmbedderSettings
from ragline.platform.stack.postgres import ensure_database
from ragline.store.migrate import migrate
from ragline.store.pool import open_pool


@pytest_asyncio.fixture(loop_scope="session")
async def install(stack: Settings) -> Settings:
    """Settings of a fresh, migrated database on the session's server."""
    settings = stack.model_copy(update={"pg_database": f"spaces_{uuid.uuid4().hex[:10]}"})
    ensure_database(settings)
    migrate(settings)
    return settings


@pytest_asyncio.fixture(loop_scope="session")
async def pool(install: Settings) -> AsyncIterator[AsyncConnectionPool]:
    p = await open_pool(install.admin_dsn(), name="spaces-test", max_size=4)
    yield p
    await p.close()


@pytest.fixture(scope="session")
def model() -> Embedder:
    """The embedder's configured model and backend (all-MiniLM-L6-v2, offline; the
    default onnx-int8 unless RAGLINE_EMBEDDER_BACKEND says otherwise), loaded once."""
    return load_embedder(EmbedderSettings())
