"""HTTP client of the query service (``POST /v1/search``) with the harness's own tokens.

The harness plays the identity provider: it mints an HS256 JWT per acting user with the
query service's secret, so every case runs with exactly the tenant and groups the golden
set names, through the same verification path a real caller goes through.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Protocol, Self

import httpx
import jwt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragline.errors import BackendUnavailable, ConfigError, PermanentError
from ragline.evaluation.settings import EvalSettings

__all__ = [
    "AbstainEvidence",
    "Identity",
    "QueryClient",
    "QueryServiceError",
    "SearchHit",
    "SearchResponse",
    "mint_token",
]

_RETRY_STATUS = frozenset({429, 502, 503, 504})


class Identity(Protocol):
    """Who a token is for: the golden set's ``Principal`` or ``ragline.auth``'s."""

    @property
    def subject(self) -> str: ...
    @property
    def tenant(self) -> str: ...
    @property
    def groups(self) -> tuple[str, ...]: ...


class QueryServiceError(PermanentError):
    """The query service refused a request (4xx other than 429): retrying will not help."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"query service answered {status}: {detail}")
        self.status = status
        self.detail = detail


class _Tolerant(BaseModel):
    # the harness reads what it needs and ignores additions to the API
    model_config = ConfigDict(frozen=True, extra="ignore")


class SearchHit(_Tolerant):
    chunk_id: str = ""
    document_id: str
    text: str = ""
    scores: dict[str, Any] = Field(default_factory=dict)
    citation: dict[str, Any] = Field(default_factory=dict)
    flags: dict[str, Any] = Field(default_factory=dict)


class AbstainEvidence(_Tolerant):
    """What the service's abstention rule looked at (absent from older services)."""

    signal: str | None = None
    best_similarity: float | None = None
    best_rerank: float | None = None
    threshold: float | None = None


class SearchResponse(_Tolerant):
    results: list[SearchHit] = Field(default_factory=list)
    abstained: bool = False
    abstain_reason: str | None = None
    evidence: AbstainEvidence | None = None
    timings_ms: dict[str, Any] = Field(default_factory=dict)
    cache: str | None = None
    trace_id: str | None = None
    degraded: list[str] = Field(default_factory=list)

    @property
    def server_ms(self) -> float | None:
        total = self.timings_ms.get("total")
        return float(total) if isinstance(total, int | float) else None

    def best_similarity(self) -> float | None:
        """The service's own figure, else the best ``dense_score`` returned (a service
        without ``evidence``; its abstentions then carry none)."""
        if self.evidence is not None:
            return self.evidence.best_similarity
        scores = [h.scores.get("dense_score") for h in self.results]
        vals = [float(v) for v in scores if isinstance(v, int | float)]
        return max(vals) if vals else None

    def rerank_applied(self) -> bool:
        return any(h.scores.get("rerank") is not None for h in self.results)


def mint_token(
    principal: Identity,
    secret: str,
    *,
    ttl_s: int = 3600,
    tenant_claim: str = "tenant",
    groups_claim: str = "groups",
    audience: str | None = None,
    issuer: str | None = None,
    now: float | None = None,
) -> str:
    issued = int(now if now is not None else time.time())
    claims: dict[str, Any] = {
        "sub": principal.subject,
        tenant_claim: principal.tenant,
        groups_claim: list(principal.groups),
        "iat": issued,
        "exp": issued + ttl_s,
    }
    if audience:
        claims["aud"] = audience
    if issuer:
        claims["iss"] = issuer
    return jwt.encode(claims, secret, algorithm="HS256")


def _problem(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.reason_phrase
    if isinstance(body, dict):
        text = str(body.get("detail") or body.get("title") or body)
        params = body.get("invalid_params")
        if params:
            text += f" (invalid: {params})"
        return text[:500]
    return str(body)[:500]


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
        self._http = httpx.AsyncClient(
            base_url=self.base_url, timeout=settings.request_timeout_s, transport=transport
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
        try:
            resp = await self._http.get("/readyz")
        except httpx.HTTPError:
            return False
        return resp.status_code == 200

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
        attempts = self.settings.request_retries + 1
        for attempt in range(attempts):
            headers = {"Authorization": f"Bearer {self.token(principal)}"}
            started = time.perf_counter()
            try:
                resp = await self._http.post("/v1/search", json=body, headers=headers)
            except httpx.TransportError as exc:
                if attempt + 1 == attempts:
                    raise BackendUnavailable(
                        f"query service unreachable at {self.base_url}: {type(exc).__name__}"
                    ) from exc
                await asyncio.sleep(0.5 * 2**attempt)
                continue
            elapsed_ms = (time.perf_counter() - started) * 1000
            if resp.status_code in _RETRY_STATUS and attempt + 1 < attempts:
                retry_after = resp.headers.get("retry-after", "")
                delay = float(retry_after) if retry_after.isdigit() else 0.5 * 2**attempt
                await asyncio.sleep(min(delay, 10.0))
                continue
            if resp.status_code in _RETRY_STATUS:
                raise BackendUnavailable(f"query service answered {resp.status_code}")
            if resp.status_code != 200:
                raise QueryServiceError(resp.status_code, _problem(resp))
            try:
                return SearchResponse.model_validate_json(resp.content), elapsed_ms
            except ValidationError as exc:
                raise QueryServiceError(200, f"unexpected response shape: {exc}") from None
        raise AssertionError("unreachable")  # pragma: no cover
