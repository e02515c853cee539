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

from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from psycopg_pool import AsyncConnectionPool

from ragline.auth import AuthError, JwtVerifier, Principal
from ragline.cache import answer_cache_factory
from ragline.errors import RaglineError, TransientError
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
from ragline.runtime.http import HttpService
from ragline.runtime.settings import Settings
from ragline.runtime.tracing import new_traceparent, valid_traceparent
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool
from ragline_client.models import (
    DocumentResponse,
    DocumentStatusResponse,
    Problem,
    SearchRequest,
    SearchResponse,
)
from services.query.problems import install_problem_handlers, problem

__all__ = ["build", "create_app"]

_log = logging.getLogger("ragline.query")
_ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": Problem, "description": d}
    for s, d in (
        (400, "unknown field or invalid request"),
        (401, "missing, invalid or expired token"),
        (403, "token grants no groups"),
        (422, "invalid field value"),
        (429, "rate limited"),
        (503, "a backend is unavailable"),
    )
}


async def _load_reranker(qs: QuerySettings) -> Reranker | None:
    if qs.rerank_model_path is None:
        return None
    rr = CrossEncoderReranker(qs.rerank_model_path)
    try:
        await rr.aload()
    except Exception as exc:  # a broken model must not stop the service: rerank degrades
        _log.error("rerank model failed to load", extra={"fields": {"error": type(exc).__name__}})
        return None
    return rr


def create_app(
    settings: Settings,
    qsettings: QuerySettings | None = None,
    *,
    embedder: QueryEmbedder | None = None,
    reranker: Reranker | None = None,
    cache_factory: Callable[[AsyncConnectionPool], ResultCache] | None = None,
) -> FastAPI:
    """The ASGI app. ``embedder``/``reranker`` may be injected (shared across test apps);
    ``cache_factory`` builds the permission-scoped result cache from the query pool
    (issue 7); without it the response says ``"cache": "off"``."""
    qs = qsettings or QuerySettings()
    verifier = JwtVerifier(qs.jwt_config())  # fails fast on missing key material
    buckets = TokenBuckets(per_minute=qs.rate_limit_per_minute, burst=qs.rate_limit_burst)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_embedder: ModelQueryEmbedder | None = None
        emb = embedder
        if emb is None:
            model = str(qs.embedding_model_path) if qs.embedding_model_path else None
            own_embedder = await ModelQueryEmbedder.load(model, torch_threads=qs.torch_threads)
            emb = CachedEmbedder(own_embedder, size=qs.embedding_cache_size)
        rr = reranker if reranker is not None else await _load_reranker(qs)
        pool = await open_pool(
            settings.query_dsn(),
            name="query",
            min_size=qs.pool_min_size,
            max_size=qs.pool_max_size,
        )
        os_client = make_client(settings, timeout_s=qs.backend_timeout_s)
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
        description="Permission-correct hybrid retrieval with citations.",
        lifespan=lifespan,
    )
    install_problem_handlers(app)

    @app.middleware("http")
    async def trace(request: Request, call_next: Any) -> Response:
        incoming = request.headers.get("traceparent")
        tp = incoming if incoming is not None and valid_traceparent(incoming) else new_traceparent()
        request.state.trace_id = tp.split("-")[1]
        response: Response = await call_next(request)
        response.headers["traceparent"] = tp
        return response

    async def principal(request: Request) -> Principal:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("missing bearer token")
        p = await verifier.verify_async(token.strip())
        buckets.take(f"{p.tenant}|{p.subject}")
        return p

    Caller = Annotated[Principal, Depends(principal)]

    @app.post("/v1/search", response_model=SearchResponse, responses=_ERRORS)
    async def search(body: SearchRequest, request: Request, who: Caller) -> SearchResponse:
        t0 = time.perf_counter()
        status = "500"
        try:
            svc: SearchService = request.app.state.service
            resp = await svc.search(who, body, trace_id=request.state.trace_id)
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

    @app.get(
        "/v1/documents/{document_id:path}/status",
        response_model=DocumentStatusResponse,
        responses=_ERRORS,
    )
    async def document_status(document_id: str, request: Request, who: Caller) -> Any:
        async with rls_transaction(request.app.state.pool, who) as conn:
            row = await get_status(conn, who, document_id)
        REQUESTS.labels("status", "-", "200" if row else "404").inc()
        if row is None:
            return problem(request, 404, "document not found")
        return row

    @app.get("/v1/documents/{document_id:path}", response_model=DocumentResponse, responses=_ERRORS)
    async def document(document_id: str, request: Request, who: Caller) -> Any:
        async with rls_transaction(request.app.state.pool, who) as conn:
            row = await get_document(conn, who, document_id)
        REQUESTS.labels("document", "-", "200" if row else "404").inc()
        if row is None:
            return problem(request, 404, "document not found")
        return row

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
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

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    return app


def build(settings: Settings) -> HttpService:
    """Entry point ``ragline.services:query``; raises ConfigError without key material."""
    return HttpService(name="query", app=create_app(settings, cache_factory=answer_cache_factory()))
