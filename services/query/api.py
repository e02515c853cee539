"""The query service: FastAPI wiring of ragline.retrieval (``ragline run query``).

The lifespan opens the RLS-bound Postgres pool (query role), the OpenSearch client and
the query embedding model; every route takes its principal from the verified bearer
token and nothing else.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from psycopg_pool import AsyncConnectionPool

from ragline.auth import AuthError, JwtVerifier, Principal
from ragline.cache import CacheSettings, answer_cache_factory
from ragline.config import EmbeddingModelSettings, Settings
from ragline.errors import ConfigError, RaglineError, TransientError
from ragline.retrieval.cache_seam import NoCache, ResultCache
from ragline.retrieval.documents import get_document, get_status
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder, QueryEmbedder
from ragline.retrieval.lexical import LexicalSearcher
from ragline.retrieval.metrics import REQUEST_SECONDS, REQUESTS
from ragline.retrieval.ratelimit import TokenBuckets
from ragline.retrieval.rerank import CrossEncoderReranker, Reranker
from ragline.retrieval.scope import rls_transaction
from ragline.retrieval.service import InvalidRequest, SearchBackends, SearchService
from ragline.retrieval.settings import QuerySettings
from ragline.retrieval.spaces import requested_space
from ragline.runtime.http import HttpService
from ragline.runtime.http_limits import SizeLimits
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool
from ragline.store.query_role import assert_unprivileged
from ragline.tracing import new_traceparent, valid_traceparent
from ragline_client.models import DocumentResponse, DocumentStatusResponse, SearchResponse
from ragline_client.text_rules import valid_document_id
from services.query.openapi import authed_errors, build_openapi, error_responses
from services.query.problems import install_problem_handlers, problem
from services.query.requests import (
    checked_document_id,
    legacy_status_id,
    parse_search_request,
    query_opensearch_settings,
)

__all__ = ["build", "create_app"]

_log = logging.getLogger("ragline.query")
_URL_SAFE = "/:@!$&'()*+,;=-._~"
_DESCRIPTION = (
    "Permission-correct hybrid retrieval with citations. Every /v1 route takes the "
    "caller's tenant and groups from the bearer JWT only. Errors are RFC 9457 problem "
    "documents (application/problem+json); limits shown here are the ones in force."
)
_DOCUMENT_ROUTE = (
    "The whole path after /v1/documents/ is the id (percent-encode ?, # and %). "
    "Deprecated: a path ending in /status that names no visible document is answered "
    "as the status of the rest (use /v1/document-status/{document_id}), with "
    "`Deprecation: true` and a successor Link; the body is then a DocumentStatusResponse."
)
_READY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["status", "checks"],
    "properties": {
        "status": {"type": "string", "enum": ["ok", "degraded"]},
        "checks": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def _cached_openapi(app: FastAPI, qs: QuerySettings) -> dict[str, Any]:
    if app.openapi_schema is None:
        app.openapi_schema = build_openapi(app, qs)
    return app.openapi_schema


async def _load_reranker(qs: QuerySettings) -> Reranker | None:
    if qs.ranking.rerank_model_path is None:
        return None
    rr = CrossEncoderReranker(qs.ranking.rerank_model_path, threads=qs.torch_threads)
    try:
        await rr.aload()
    except Exception as exc:  # a broken model must not stop the service: rerank degrades
        _log.error("rerank model failed to load", extra={"fields": {"error": type(exc).__name__}})
        return None
    return rr


def create_app(
    settings: Settings,
    qs: QuerySettings,
    *,
    model: EmbeddingModelSettings | None = None,
    embedder: QueryEmbedder | None = None,
    reranker: Reranker | None = None,
    cache_factory: Callable[[AsyncConnectionPool], ResultCache] | None = None,
) -> FastAPI:
    """The ASGI app. ``embedder``/``reranker`` may be injected (shared across test apps);
    ``cache_factory`` builds the permission-scoped result cache from the query pool
    (issue 7); without it the response says ``"cache": "off"``. ``model``: the shared
    embedding model settings, loaded when no ``embedder`` is given."""
    verifier = JwtVerifier(qs.auth.jwt_config())  # fails fast on missing key material
    admin_key = qs.auth.space_admin_key.get_secret_value() if qs.auth.space_admin_key else None
    limit = qs.rate_limit
    buckets = TokenBuckets(per_minute=limit.rate_limit_per_minute, burst=limit.rate_limit_burst)
    if embedder is None and model is None:
        raise ConfigError("the query service needs an embedder or the model settings")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_embedder: ModelQueryEmbedder | None = None
        emb = embedder
        if emb is None:
            assert model is not None  # checked above
            path = qs.ranking.embedding_model_path
            own_embedder = await ModelQueryEmbedder.load(
                model, location=str(path) if path else None, torch_threads=qs.torch_threads
            )
            emb = CachedEmbedder(own_embedder, size=qs.embedding_cache_size)
        rr = reranker if reranker is not None else await _load_reranker(qs)
        pool = await open_pool(
            settings.query_dsn(),
            name="query",
            min_size=qs.pool_min_size,
            max_size=qs.pool_max_size,
        )
        await assert_unprivileged(pool)  # never serve as a superuser or a BYPASSRLS role
        os_client = make_client(
            query_opensearch_settings(settings, qs), timeout_s=qs.backend_timeout_s
        )
        lexical = LexicalSearcher(os_client, index_prefix=settings.opensearch_index_prefix)
        app.state.pool = pool
        app.state.lexical = lexical
        cache = cache_factory(pool) if cache_factory is not None else NoCache()
        app.state.service = SearchService(
            SearchBackends(pool=pool, lexical=lexical, embedder=emb, reranker=rr, cache=cache),
            qs,
        )
        try:
            yield
        finally:
            await os_client.close()
            await pool.close()
            if own_embedder is not None:
                own_embedder.close()

    app = FastAPI(
        title="ragline query API",
        version="1",
        description=_DESCRIPTION,
        lifespan=lifespan,
        redirect_slashes=False,
    )
    install_problem_handlers(app)
    app.openapi = lambda: _cached_openapi(app, qs)  # type: ignore[method-assign]

    @app.middleware("http")
    async def trace(request: Request, call_next: Any) -> Response:
        incoming = request.headers.get("traceparent")
        tp = incoming if incoming is not None and valid_traceparent(incoming) else new_traceparent()
        request.state.trace_id = tp.split("-")[1]
        response: Response = await call_next(request)
        response.headers["traceparent"] = tp
        return response

    # outermost: oversized requests are refused before routing, parsing and the token
    app.add_middleware(
        SizeLimits, max_body_bytes=qs.max_body_bytes, max_header_bytes=qs.max_header_bytes
    )

    async def principal(request: Request) -> Principal:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("missing bearer token")
        p = await verifier.verify_async(token.strip())
        buckets.take(f"{p.tenant}|{p.subject}")
        return p

    Caller = Annotated[Principal, Depends(principal)]

    @app.post(
        "/v1/search",
        operation_id="search",
        summary="Search the documents the caller may see",
        response_model=SearchResponse,
        responses=authed_errors(400, 415, 422, 503),
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/SearchRequest"}}
                },
            }
        },
    )
    async def search(request: Request, who: Caller) -> SearchResponse:
        body = await parse_search_request(request)
        t0 = time.perf_counter()
        status = "500"
        try:
            svc: SearchService = request.app.state.service
            space = requested_space(request.headers, admin_key)  # 403 unless admin
            resp = await svc.search(who, body, trace_id=request.state.trace_id, space=space)
            status = "200"
            return resp
        except InvalidRequest:
            status = "400"
            raise
        except TransientError:
            status = "503"
            raise
        finally:
            elapsed = time.perf_counter() - t0
            REQUESTS.labels("search", body.mode, status).inc()
            REQUEST_SECONDS.labels(body.mode).observe(elapsed)
            # ids, counts and codes only: never the query, evidence or the subject
            _log.info(
                "search",
                extra={
                    "fields": {
                        "trace_id": request.state.trace_id,
                        "mode": body.mode,
                        "status": status,
                        "queries": len(body.query_texts),
                        "ms": round(elapsed * 1000, 1),
                    }
                },
            )

    async def _status(request: Request, who: Principal, document_id: str) -> Any:
        async with rls_transaction(request.app.state.pool, who) as conn:
            return await get_status(conn, who, document_id)

    @app.get(
        "/v1/document-status/{document_id:anypath}",
        operation_id="getDocumentStatus",
        summary="Ingestion status of a document (any id, including ids ending in /status)",
        response_model=DocumentStatusResponse,
        responses=authed_errors(404, 422, 503),
    )
    async def document_status(document_id: str, request: Request, who: Caller) -> Any:
        row = await _status(request, who, checked_document_id(document_id))
        REQUESTS.labels("status", "-", "200" if row else "404").inc()
        if row is None:
            return problem(request, 404, "document not found")
        return row

    @app.get(
        "/v1/documents/{document_id:anypath}",
        operation_id="getDocument",
        summary="Metadata of a document (any id, including ids ending in /status)",
        description=_DOCUMENT_ROUTE,
        response_model=DocumentResponse,
        responses=authed_errors(404, 422, 503),
    )
    async def document(document_id: str, request: Request, who: Caller) -> Any:
        legacy = legacy_status_id(document_id)
        if legacy is None:
            checked_document_id(document_id)
        row = None
        if legacy is None or valid_document_id(document_id):
            async with rls_transaction(request.app.state.pool, who) as conn:
                row = await get_document(conn, who, document_id)
        if row is None and legacy is not None:
            # the deprecated status form, taken only when no visible document has this id
            st = await _status(request, who, legacy)
            REQUESTS.labels("status", "-", "200" if st else "404").inc()
            if st is None:
                return problem(request, 404, "document not found")
            successor = f"</v1/document-status/{quote(legacy, safe=_URL_SAFE)}>"
            return JSONResponse(
                st.model_dump(mode="json"),
                headers={"Deprecation": "true", "Link": f'{successor}; rel="successor-version"'},
            )
        REQUESTS.labels("document", "-", "200" if row else "404").inc()
        if row is None:
            return problem(request, 404, "document not found")
        return row

    @app.get("/healthz", operation_id="healthz", responses=error_responses())
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz",
        operation_id="readyz",
        responses={
            200: {"content": {"application/json": {"schema": _READY_SCHEMA}}},
            **error_responses(503),
        },
    )
    async def readyz(request: Request) -> JSONResponse:
        async def pg() -> str:
            async with request.app.state.pool.connection() as conn:
                await conn.execute("SELECT 1")
            return "ok"

        async def os_() -> str:
            return "ok" if await request.app.state.lexical.ping() else "down"

        checks: dict[str, str] = {}
        for name, fn in (("postgres", pg), ("opensearch", os_)):
            try:
                checks[name] = await asyncio.wait_for(fn(), qs.backend_timeout_s)
            except (RaglineError, OSError, TimeoutError, Exception):
                checks[name] = "down"
        if checks["postgres"] != "ok":
            return problem(request, 503, "not ready", f"checks: {checks}")
        # OpenSearch down still serves dense-only results: ready, but say so
        status = "ok" if checks["opensearch"] == "ok" else "degraded"
        return JSONResponse({"status": status, "checks": checks})

    @app.get(
        "/metrics",
        operation_id="metrics",
        response_class=Response,
        responses={
            200: {
                "description": "Prometheus text exposition format",
                "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
            },
            **error_responses(),
        },
    )
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    return app


def build(settings: Settings) -> HttpService:
    """Entry point ``ragline.services:query``: reads the query, cache and shared model
    settings once; raises ConfigError without key material."""
    qs = QuerySettings()
    model = EmbeddingModelSettings()
    factory = answer_cache_factory(CacheSettings(), qs, model)
    app = create_app(settings, qs, model=model, cache_factory=factory)
    return HttpService(name="query", app=app)
