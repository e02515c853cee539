"""Fixtures for the indexer against the real stack: a started IndexerStage, connections
as the pipeline (admin) and as the RLS-bound query role, an OpenSearch client, and
``apply(events)`` which drives the stage exactly as the runtime does (handle_batch)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import psycopg
import pytest_asyncio
from opensearchpy import AsyncOpenSearch

from ragline.config import Settings
from ragline.events import EventBase
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.runtime.stage import Output, StageContext
from ragline.store.os_client import make_client

Apply = Callable[[Sequence[EventBase]], Awaitable[list[Sequence[Output] | BaseException]]]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def indexer(stack: Settings) -> AsyncIterator[IndexerStage]:
    # refresh "true", not the deployed "wait_for": the same promise (a batch's writes are
    # searchable when it returns) without waiting for the index's next 1 s refresh, which
    # cost ~1 s per apply (test_alias_flip 48 s -> 9 s); the in-process tests apply one
    # event at a time. The service processes (e2e, service_process) keep "wait_for".
    stage = IndexerStage(stack, IndexerSettings(os_refresh="true"))
    await stage.start()
    yield stage
    await stage.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def os_client(stack: Settings) -> AsyncIterator[AsyncOpenSearch]:
    client = make_client(stack)
    yield client
    await client.close()


@pytest_asyncio.fixture(loop_scope="session")
async def admin(stack: Settings) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    conn = await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True)
    yield conn
    await conn.close()


@pytest_asyncio.fixture(loop_scope="session")
async def query_conn(stack: Settings) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    conn = await psycopg.AsyncConnection.connect(stack.query_dsn())
    yield conn
    await conn.close()


def ctx_for(settings: Settings) -> StageContext:
    return StageContext(settings=settings, logger=logging.getLogger("test.indexer"))


@pytest_asyncio.fixture(loop_scope="session")
async def apply(indexer: IndexerStage, stack: Settings) -> Apply:
    async def run(events: Sequence[EventBase]) -> list[Sequence[Output] | BaseException]:
        return list(await indexer.handle_batch(list(events), ctx_for(stack)))

    return run
