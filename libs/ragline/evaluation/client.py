"""The harness's query-service client: ``ragline_client.AsyncRagline`` with its own tokens.

The harness plays the identity provider: it mints an HS256 JWT per acting user with the
query service's secret, so every case runs with exactly the tenant and groups the golden
set names, through the same verification path a real caller goes through. Requests,
responses, retries and errors are ragline-client's (the API's one set of models); this
module only adds the figures the report derives from a response.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Self

import httpx

from ragline.auth.tokens import Identity, mint_token
from ragline.errors import BackendUnavailable, ConfigError, PermanentError
from ragline.evaluation.settings import EvalSettings
from ragline_client import (
    ApiError,
    AsyncRagline,
    RateLimited,
    ResponseShapeError,
    RetryPolicy,
    SearchRequest,
    TransportError,
    Unavailable,
)
from ragline_client import SearchResponse as ApiSearchResponse
from ragline_client.models import AbstainEvidence

__all__ = [
    "AbstainEvidence",
    "QueryClient",
    "QueryServiceError",
    "SearchResponse",
]

# client-side latency of the attempt that answered (set by the response hook, per task)
_ATTEMPT_MS: ContextVar[float] = ContextVar("ragline_eval_attempt_ms", default=0.0)
_T0 = "ragline_eval_t0"


class QueryServiceError(PermanentError):
    """The query service refused a request (4xx other than 429): retrying will not help."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"query service answered {status}: {detail}")
        self.status = status
        self.detail = detail


class SearchResponse(ApiSearchResponse):
    """The API's response plus the figures the harness reports."""

    @property
    def server_ms(self) -> float | None:
        return self.timings_ms.get("total")

    def best_similarity(self) -> float | None:
        """The service's own figure, else the best ``dense_score`` returned (a service
        without ``evidence``; its abstentions then carry none)."""
        if self.evidence is not None:
            return self.evidence.best_similarity
        vals = [h.scores.dense_score for h in self.results if h.scores.dense_score is not None]
        return max(vals) if vals else None

    def rerank_applied(self) -> bool:
        return any(h.scores.rerank is not None for h in self.results)


def _detail(exc: ApiError) -> str:
    p = exc.problem
    text = str(p.detail or p.title)
    if p.invalid_params:
        text += f" (invalid: {p.invalid_params})"
    return text[:500]


async def _started(request: httpx.Request) -> None:
    request.extensions[_T0] = time.perf_counter()


async def _answered(response: httpx.Response) -> None:
    await response.aread()
    t0 = response.request.extensions.get(_T0)
    if isinstance(t0, float):
        _ATTEMPT_MS.set((time.perf_counter() - t0) * 1000)


class QueryClient:
    """``async with QueryClient(settings) as qc: resp, ms = await qc.search(...)``."""

    def __init__(
        self,
        settings: EvalSettings,
        *,
        base_url: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if settings.jwt_secret is None:
            raise ConfigError(
                "set RAGLINE_QUERY_JWT_SECRET (or RAGLINE_EVAL_JWT_SECRET): the harness mints "
                "the acting users' tokens with the query service's secret"
            )
        self.settings = settings
        self.base_url = (base_url or settings.query_url).rstrip("/")
        self._secret = settings.jwt_secret.get_secret_value()
        self._tokens: dict[tuple[str, str, tuple[str, ...]], tuple[str, float]] = {}
        headers: dict[str, str] = {}
        if settings.space is not None:  # an admin evaluating a non-live space (ADR 0013)
            if settings.space_admin_key is None:
                raise ConfigError("a space needs RAGLINE_QUERY_SPACE_ADMIN_KEY (admin only)")
            headers = {
                "X-Ragline-Space": settings.space,
                "X-Ragline-Admin-Key": settings.space_admin_key.get_secret_value(),
            }
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=settings.request_timeout_s,
            transport=transport,
            event_hooks={"request": [_started], "response": [_answered]},
        )
        self._rag = AsyncRagline(
            self.base_url,
            http=self._http,
            # no jitter: one harness client, and a run's pauses should be reproducible
            retry=RetryPolicy(
                attempts=settings.request_retries + 1,
                backoff_s=0.5,
                max_retry_after_s=10.0,
                jitter=False,
            ),
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._http.aclose()

    def token(self, principal: Identity) -> str:
        key = (principal.subject, principal.tenant, tuple(principal.groups))
        cached = self._tokens.get(key)
        if cached is not None and cached[1] - time.time() > 60:
            return cached[0]
        s = self.settings
        tok = mint_token(
            principal,
            self._secret,
            ttl_s=s.jwt_ttl_s,
            tenant_claim=s.tenant_claim,
            groups_claim=s.groups_claim,
            audience=s.jwt_audience,
            issuer=s.jwt_issuer,
        )
        self._tokens[key] = (tok, time.time() + s.jwt_ttl_s)
        return tok

    async def ready(self) -> bool:
        return await self._rag.ready()

    async def search(
        self,
        principal: Identity,
        query: str,
        *,
        mode: str,
        rerank: bool,
        top_k: int,
        filters: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> tuple[SearchResponse, float]:
        """The response and the client-side latency (ms) of the attempt that answered."""
        body: dict[str, Any] = {"query": query, "top_k": top_k, "mode": mode, "rerank": rerank}
        if filters:
            body["filters"] = dict(filters)
        body.update(extra or {})
        try:
            request = SearchRequest.model_validate(body)
        except ValueError as exc:  # the API's own model refuses it: so would the service
            raise QueryServiceError(422, f"invalid request: {exc}"[:500]) from None
        rag = self._rag.with_token(self.token(principal))
        try:
            resp = await rag.search(request)
        except (RateLimited, Unavailable) as exc:
            raise BackendUnavailable(f"query service answered {exc.status}") from exc
        except TransportError as exc:
            raise BackendUnavailable(
                f"query service unreachable at {self.base_url}: {exc}"
            ) from exc
        except ResponseShapeError as exc:
            raise QueryServiceError(200, f"unexpected response shape: {exc}") from None
        except ApiError as exc:
            raise QueryServiceError(exc.status, _detail(exc)) from None
        return SearchResponse.model_validate(resp.model_dump()), _ATTEMPT_MS.get()
