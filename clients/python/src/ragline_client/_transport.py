"""The request loop shared by the sync and async clients: auth, retries, error mapping.

Both loops are the same state machine; only sending, sleeping and getting a token differ,
so the decisions live in ``_Loop`` and each client drives it with its own I/O.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from ragline_client.auth import TokenProvider
from ragline_client.errors import ResponseShapeError, TransportError, error_for
from ragline_client.retry import RetryPolicy, parse_retry_after

__all__ = ["Request", "send_async", "send_sync"]

M = TypeVar("M", bound=BaseModel)
USER_AGENT = "ragline-client/0.1"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes | None = None
    headers: Mapping[str, str] | None = None
    # sent with a bearer token from the provider (False: the caller set auth headers)
    authenticated: bool = True
    # safe to send twice: reads, and writes the server deduplicates
    idempotent: bool = True
    timeout: float | httpx.Timeout | None = None
    # extra headers computed per attempt (a signature with a fresh timestamp)
    signer: Callable[[bytes], Mapping[str, str]] | None = None


@dataclass
class _Loop:
    retry: RetryPolicy
    provider: TokenProvider | None
    attempt: int = 0
    reauthed: bool = False

    def headers(self, req: Request, token: str | None) -> dict[str, str]:
        h = dict(req.headers or {})
        if req.body is not None:
            h.setdefault("Content-Type", "application/json")
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        if req.signer is not None:
            h.update(req.signer(req.body or b""))
        return h

    def wants_token(self, req: Request) -> bool:
        return req.authenticated and self.provider is not None

    def after_transport_error(self, req: Request, exc: httpx.TransportError) -> float:
        """The pause before the next attempt, or raises ``TransportError``."""
        # a refused connection never reached the server: safe to resend anything
        safe = req.idempotent or isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        delay = self.retry.delay(self.attempt, None, None) if safe else None
        if delay is None:
            raise TransportError(
                f"{req.method} {req.path}: {type(exc).__name__} after {self.attempt + 1} attempt(s)"
            ) from exc
        self.attempt += 1
        return delay

    def after_response(self, req: Request, resp: httpx.Response) -> float | None:
        """None when ``resp`` is the answer; a pause before retrying; raises ``ApiError``."""
        if resp.is_success:
            return None
        if (
            resp.status_code == 401
            and self.wants_token(req)
            and not self.reauthed
            and self.provider is not None
            and self.provider.invalidate()
        ):
            self.reauthed = True  # one fresh token per call, then the 401 stands
            return 0.0
        retry_after = parse_retry_after(resp.headers.get("retry-after"))
        delay = self.retry.delay(self.attempt, resp.status_code, retry_after)
        if delay is None or not req.idempotent:
            raise error_for(resp, retry_after)
        self.attempt += 1
        return delay


def parse(resp: httpx.Response, model: type[M]) -> M:
    try:
        return model.model_validate_json(resp.content)
    except ValidationError as exc:
        count = exc.error_count()
        raise ResponseShapeError(
            f"{resp.request.method} {resp.request.url.path}: the {resp.status_code} body is not "
            f"a {model.__name__} ({count} error(s); first: {exc.errors()[0]['msg']})"
        ) from None


def send_sync(
    http: httpx.Client,
    req: Request,
    retry: RetryPolicy,
    provider: TokenProvider | None,
    sleep: Callable[[float], None] | None = None,
) -> httpx.Response:
    pause = sleep or time.sleep
    loop = _Loop(retry, provider)
    while True:
        token = provider.get_token() if loop.wants_token(req) and provider else None
        kw: dict[str, Any] = {} if req.timeout is None else {"timeout": req.timeout}
        try:
            resp = http.request(
                req.method, req.path, content=req.body, headers=loop.headers(req, token), **kw
            )
        except httpx.TransportError as exc:
            pause(loop.after_transport_error(req, exc))
            continue
        delay = loop.after_response(req, resp)
        if delay is None:
            return resp
        resp.close()
        if delay:
            pause(delay)


async def send_async(
    http: httpx.AsyncClient,
    req: Request,
    retry: RetryPolicy,
    provider: TokenProvider | None,
    sleep: Callable[[float], Any] | None = None,
) -> httpx.Response:
    pause = sleep or asyncio.sleep
    loop = _Loop(retry, provider)
    while True:
        token = await provider.aget_token() if loop.wants_token(req) and provider else None
        kw: dict[str, Any] = {} if req.timeout is None else {"timeout": req.timeout}
        try:
            resp = await http.request(
                req.method, req.path, content=req.body, headers=loop.headers(req, token), **kw
            )
        except httpx.TransportError as exc:
            await pause(loop.after_transport_error(req, exc))
            continue
        delay = loop.after_response(req, resp)
        if delay is None:
            return resp
        await resp.aclose()
        if delay:
            await pause(delay)
