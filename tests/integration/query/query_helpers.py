"""Constants and helpers of the query integration tests (tokens, settings, the app)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
from fastapi import FastAPI

from ragline.config import Settings
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.settings import QuerySettings
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
    return QuerySettings.from_fields(**base)


@asynccontextmanager
async def running_app(
    settings: Settings, qs: QuerySettings, embedder: QueryEmbedder, **kw: Any
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    app = create_app(settings, qs, embedder=embedder, **kw)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://query") as client:
            yield app, client
