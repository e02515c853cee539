"""Query service fixtures: one seeded corpus per session (two tenants, two groups,
versions, a deleted and a future document), the FastAPI app in-process, and tokens."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest_asyncio
from fastapi import FastAPI
from query_corpus import delete, main_corpus, other_tenant_corpus, seed

from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder, QueryEmbedder
from ragline.retrieval.settings import QuerySettings
from ragline.runtime.settings import Settings
from ragline.runtime.stack.testing import unique_tenant
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool
from services.query.api import create_app

SECRET = "query-integration-secret-0123456789abcdef"
GROUP_A = "eng"
GROUP_B = "finance"


@dataclass(frozen=True)
class Corpus:
    tenant: str
    other_tenant: str
    # document ids visible per (tenant, group)
    visible: dict[tuple[str, str], frozenset[str]]
    all_docs: frozenset[str]


def make_token(
    tenant: str, groups: list[str], *, sub: str = "tester", exp_in: float = 300, **extra: Any
) -> str:
    claims = {"sub": sub, "tenant": tenant, "groups": groups, "exp": time.time() + exp_in}
    claims.update(extra)
    return jwt.encode(claims, SECRET, algorithm="HS256")


def auth(tenant: str, groups: list[str], **kw: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(tenant, groups, **kw)}"}


def query_settings(**over: Any) -> QuerySettings:
    base: dict[str, Any] = {"jwt_secret": SECRET, "rate_limit_per_minute": 0}
    base.update(over)
    return QuerySettings(**base)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def embedder() -> AsyncIterator[QueryEmbedder]:
    inner = await ModelQueryEmbedder.load()
    yield CachedEmbedder(inner, size=8192)
    inner.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def corpus(stack: Settings, embedder: QueryEmbedder) -> Corpus:
    tenant, other = unique_tenant("q"), unique_tenant("q")
    pool = await open_pool(stack.admin_dsn(), name="query-seed")
    client = make_client(stack)
    try:
        main = main_corpus(GROUP_A, GROUP_B)
        prefix = stack.opensearch_index_prefix
        await seed(pool, client, prefix, tenant, main, embedder)
        await seed(pool, client, prefix, other, other_tenant_corpus(GROUP_A), embedder)
        await delete(pool, client, prefix, tenant, "tmp:deleted")
    finally:
        await client.close()
        await pool.close()
    live = [d for d in main if d.document_id != "tmp:deleted"]
    visible = {
        (tenant, g): frozenset(d.document_id for d in live if g in d.groups)
        for g in (GROUP_A, GROUP_B)
    }
    visible[(other, GROUP_A)] = frozenset(d.document_id for d in other_tenant_corpus(GROUP_A))
    return Corpus(
        tenant=tenant,
        other_tenant=other,
        visible=visible,
        all_docs=frozenset(d.document_id for d in main),
    )


@asynccontextmanager
async def running_app(
    settings: Settings, qs: QuerySettings, embedder: QueryEmbedder, **kw: Any
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    app = create_app(settings, qs, embedder=embedder, **kw)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://query") as client:
            yield app, client


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def client(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder
) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(stack, query_settings(), embedder) as (_, c):
        yield c


Search = Callable[..., Any]
