"""``Ragline`` (sync) and ``AsyncRagline``: the query API's search, document and status.

    with Ragline("http://query:8080", token=my_token_fn) as rag:
        resp = rag.search("how do I rotate keys", top_k=5, filters={"source_type": ["wiki"]})

Every call: a bearer token from the provider (refreshed once after a 401), retries with
backoff on 429/502/503/504 honouring ``Retry-After``, the configured timeout, and errors
raised as the typed exceptions of ``ragline_client.errors``. Requests are validated by
the API's own models before they are sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from ragline_client._closing import AsyncClosing, SyncClosing
from ragline_client._transport import USER_AGENT, Request, parse, send_async, send_sync
from ragline_client.auth import TokenLike, TokenProvider, as_provider
from ragline_client.errors import ResponseShapeError
from ragline_client.models import (
    DocumentResponse,
    DocumentStatusResponse,
    SearchRequest,
    SearchResponse,
)
from ragline_client.retry import RetryPolicy

__all__ = ["AsyncRagline", "Ragline", "search_request"]

Timeout = float | httpx.Timeout
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


def search_request(query: str | Sequence[str] | SearchRequest, **fields: Any) -> SearchRequest:
    """The validated request: a question, several (fan-out), or a ready ``SearchRequest``."""
    if isinstance(query, SearchRequest):
        if fields:
            raise TypeError("pass either a SearchRequest or keyword fields, not both")
        return query
    if isinstance(query, str):
        return SearchRequest(query=query, **fields)
    return SearchRequest(queries=tuple(query), **fields)


def _search_call(req: SearchRequest, timeout: Timeout | None) -> Request:
    body = req.model_dump_json(exclude_unset=True).encode()
    return Request("POST", "/v1/search", body=body, timeout=timeout)


D = TypeVar("D", DocumentResponse, DocumentStatusResponse)


def _same_document(asked: str, got: D) -> D:
    """The answer must be about the document asked for: a server that routes by decoded
    path answers ``GET /v1/documents/x%2Fstatus`` with the status of ``x``."""
    if got.document_id != asked:
        raise ResponseShapeError(
            f"asked for one document, the server answered for another ({len(asked)} vs "
            f"{len(got.document_id)} characters); ids ending in '/status' are ambiguous"
        )
    return got


def _doc_path(document_id: str, route: str = "/v1/documents/") -> str:
    """``route`` + the id as ONE encoded segment; ``/v1/document-status/`` for the status
    (the server's ``/v1/documents/{id}/status`` form is deprecated: ambiguous for ids
    that end in ``/status``)."""
    if not isinstance(document_id, str) or not document_id:
        raise ValueError("document_id must be a non-empty string")
    segment = quote(document_id, safe="")
    if segment.strip(".") == "":
        # "." and ".." would be removed as dot-segments (URL normalisation): another path
        segment = segment.replace(".", "%2E")
    return f"{route}{segment}"


class _Base:
    def __init__(
        self,
        base_url: str,
        token: TokenLike,
        retry: RetryPolicy | None,
        headers: dict[str, str] | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.provider: TokenProvider | None = as_provider(token)
        self.retry = retry or RetryPolicy()
        self._headers = {"User-Agent": USER_AGENT, **(headers or {})}

    def _http_options(self, timeout: Timeout, transport: Any) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "timeout": timeout,
            "transport": transport,
            "headers": self._headers,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"


class Ragline(_Base, SyncClosing):
    """The synchronous client. Thread-safe; share one per process."""

    def __init__(
        self,
        base_url: str,
        *,
        token: TokenLike = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, token, retry, headers)
        self._owns_http = http is None
        self._http = http or httpx.Client(**self._http_options(timeout, transport))

    def with_token(self, token: TokenLike) -> Ragline:
        """A client for another caller sharing this one's connections (close the original)."""
        return Ragline(self.base_url, token=token, retry=self.retry, http=self._http)

    def _send(self, req: Request) -> httpx.Response:
        return send_sync(self._http, req, self.retry, self.provider)

    def search(
        self,
        query: str | Sequence[str] | SearchRequest,
        /,
        *,
        timeout: Timeout | None = None,
        **fields: Any,
    ) -> SearchResponse:
        resp = self._send(_search_call(search_request(query, **fields), timeout))
        return parse(resp, SearchResponse)

    def document(self, document_id: str, *, timeout: Timeout | None = None) -> DocumentResponse:
        resp = self._send(Request("GET", _doc_path(document_id), timeout=timeout))
        return _same_document(document_id, parse(resp, DocumentResponse))

    def document_status(
        self, document_id: str, *, timeout: Timeout | None = None
    ) -> DocumentStatusResponse:
        resp = self._send(
            Request("GET", _doc_path(document_id, "/v1/document-status/"), timeout=timeout)
        )
        return _same_document(document_id, parse(resp, DocumentStatusResponse))

    def ready(self) -> bool:
        """``/readyz`` answered 200 (no retries, no token)."""
        try:
            return self._http.get("/readyz", timeout=5.0).status_code == 200
        except httpx.HTTPError:
            return False

    def close(self) -> None:
        if self._owns_http:
            self._http.close()


class AsyncRagline(_Base, AsyncClosing):
    """The asyncio client; one per event loop."""

    def __init__(
        self,
        base_url: str,
        *,
        token: TokenLike = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, token, retry, headers)
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(**self._http_options(timeout, transport))

    def with_token(self, token: TokenLike) -> AsyncRagline:
        """A client for another caller sharing this one's connections (close the original)."""
        return AsyncRagline(self.base_url, token=token, retry=self.retry, http=self._http)

    async def _send(self, req: Request) -> httpx.Response:
        return await send_async(self._http, req, self.retry, self.provider)

    async def search(
        self,
        query: str | Sequence[str] | SearchRequest,
        /,
        *,
        timeout: Timeout | None = None,
        **fields: Any,
    ) -> SearchResponse:
        resp = await self._send(_search_call(search_request(query, **fields), timeout))
        return parse(resp, SearchResponse)

    async def document(
        self, document_id: str, *, timeout: Timeout | None = None
    ) -> DocumentResponse:
        resp = await self._send(Request("GET", _doc_path(document_id), timeout=timeout))
        return _same_document(document_id, parse(resp, DocumentResponse))

    async def document_status(
        self, document_id: str, *, timeout: Timeout | None = None
    ) -> DocumentStatusResponse:
        resp = await self._send(
            Request("GET", _doc_path(document_id, "/v1/document-status/"), timeout=timeout)
        )
        return _same_document(document_id, parse(resp, DocumentStatusResponse))

    async def ready(self) -> bool:
        try:
            return (await self._http.get("/readyz", timeout=5.0)).status_code == 200
        except httpx.HTTPError:
            return False

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()
