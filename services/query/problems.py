"""RFC 7807 problem responses for every error the query API can return (never a trace)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragline.auth import AuthError, Forbidden
from ragline.errors import RaglineError, TransientError
from ragline.retrieval.ratelimit import RateLimited
from ragline.retrieval.service import InvalidRequest
from ragline_client.models import Problem
from services.query.requests import UnsupportedMediaType

__all__ = ["install_problem_handlers", "problem"]

_log = logging.getLogger("ragline.query")
_TYPES = {
    400: "invalid-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    422: "unprocessable",
    413: "payload-too-large",
    415: "unsupported-media-type",
    429: "rate-limited",
    431: "headers-too-large",
    500: "internal",
    503: "backend-unavailable",
}


def problem(
    request: Request,
    status: int,
    title: str,
    detail: str | None = None,
    *,
    invalid_params: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = Problem(
        type=f"https://ragline.dev/problems/{_TYPES.get(status, 'error')}",
        title=title,
        status=status,
        detail=detail,
        instance=request.url.path,
        invalid_params=invalid_params,
        trace_id=getattr(request.state, "trace_id", None),
    )
    return JSONResponse(
        body.model_dump(exclude_none=True),
        status_code=status,
        media_type="application/problem+json",
        headers=headers,
    )


def _loc(loc: tuple[Any, ...]) -> str:
    """``("body", "filters", "versions", 0)`` -> ``filters.versions.0``; a path or
    query parameter by its name."""
    head = loc[:1]
    parts = [str(p) for p in (loc[1:] if head in (("body",), ("path",), ("query",)) else loc)]
    return ".".join(parts) or "body"


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errs = exc.errors()
    params = [{"name": _loc(tuple(e.get("loc", ()))), "reason": str(e.get("msg"))} for e in errs]
    # an unknown field or unparseable JSON is a bad request; a known field with a bad
    # value is unprocessable
    bad = any(e.get("type") in ("extra_forbidden", "json_invalid") for e in errs)
    status = 400 if bad else 422
    title = "unknown or malformed field" if bad else "invalid field value"
    return problem(request, status, title, invalid_params=params)


async def _media(request: Request, exc: Exception) -> JSONResponse:
    return problem(request, 415, "unsupported media type", "send application/json")


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InvalidRequest)
    return problem(
        request, 400, "invalid request", invalid_params=[{"name": exc.field, "reason": exc.reason}]
    )


async def _auth(request: Request, exc: Exception) -> JSONResponse:
    return problem(
        request,
        401,
        "unauthorized",
        str(exc),
        headers={"WWW-Authenticate": 'Bearer realm="ragline"'},
    )


async def _forbidden(request: Request, exc: Exception) -> JSONResponse:
    return problem(request, 403, "forbidden", str(exc))


async def _limited(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RateLimited)
    retry = max(1, int(exc.retry_after_s + 0.999))
    return problem(request, 429, "too many requests", headers={"Retry-After": str(retry)})


async def _transient(request: Request, exc: Exception) -> JSONResponse:
    _log.warning("backend unavailable", extra={"fields": {"error": type(exc).__name__}})
    return problem(request, 503, "backend unavailable", str(exc), headers={"Retry-After": "1"})


async def _ragline(request: Request, exc: Exception) -> JSONResponse:
    _log.error("search failed", extra={"fields": {"error": type(exc).__name__}})
    return problem(request, 500, "internal error")


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers) if exc.headers else None
    return problem(request, exc.status_code, str(exc.detail), headers=headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    _log.error("unexpected error", exc_info=exc)
    return problem(request, 500, "internal error")


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(InvalidRequest, _invalid)
    app.add_exception_handler(UnsupportedMediaType, _media)
    app.add_exception_handler(AuthError, _auth)
    app.add_exception_handler(Forbidden, _forbidden)
    app.add_exception_handler(RateLimited, _limited)
    app.add_exception_handler(TransientError, _transient)
    app.add_exception_handler(RaglineError, _ragline)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
