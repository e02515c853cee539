"""The query API's OpenAPI document, made exact (issue 14).

FastAPI's generated document is the starting point; this module fixes what it cannot
say by itself: errors are ``application/problem+json`` (never FastAPI's
``HTTPValidationError``), every status a route can return is listed with the headers
it carries, the limits are the ones in force (``QuerySettings``), a bearer security
scheme guards ``/v1/*``, ``/metrics`` is Prometheus text, and document ids carry their
pattern. Generated clients and the schemathesis run (tests/integration/query) rely on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from ragline.retrieval.api_models import SearchRequest
from ragline.retrieval.settings import QuerySettings
from ragline_client.text_rules import DOCUMENT_ID_PATTERN

__all__ = ["ERROR_STATUSES", "PROBLEM", "build_openapi", "error_responses"]

PROBLEM = "application/problem+json"
_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}}
ERROR_STATUSES: dict[int, str] = {
    400: "unknown field, malformed JSON or a value beyond a limit in force",
    401: "missing, invalid or expired bearer token",
    403: "the token grants no groups",
    404: "not found, or not visible to the caller (indistinguishable)",
    413: "request body larger than the limit in force (checked before authentication)",
    415: "the body is not JSON",
    422: "a field has an invalid value (invalid_params names it)",
    429: "rate limited",
    431: "request headers larger than the limit in force",
    500: "internal error (a bug: please report it with the trace_id)",
    503: "a backend is unavailable; retry",
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {
        "WWW-Authenticate": {
            "description": 'always `Bearer realm="ragline"`',
            "schema": {"type": "string"},
            "required": True,
        }
    },
    429: {**{k: {**v, "required": True} for k, v in _RETRY_AFTER.items()}},
    503: _RETRY_AFTER,
}
# which errors each kind of route can produce (413/431 are answered for every path)
_ALWAYS = (413, 431, 500)
_AUTHED = (401, 403, 429)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: each status as a problem document."""
    out: dict[int | str, dict[str, Any]] = {}
    for s in sorted({*statuses, *_ALWAYS}):
        entry: dict[str, Any] = {
            "description": ERROR_STATUSES[s],
            "content": {PROBLEM: {"schema": _PROBLEM_REF}},
        }
        if s in _HEADERS:
            entry["headers"] = _HEADERS[s]
        out[s] = entry
    return out


def authed_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return error_responses(*_AUTHED, *statuses)


def _problem_schema() -> dict[str, Any]:
    return {
        "title": "Problem",
        "description": "RFC 9457 problem details",
        "type": "object",
        "required": ["type", "title", "status"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "instance": {"type": "string"},
            "invalid_params": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "reason"],
                    "properties": {"name": {"type": "string"}, "reason": {"type": "string"}},
                    "additionalProperties": {"type": "string"},
                },
            },
            "trace_id": {"type": "string"},
        },
    }


def _add_model(schemas: dict[str, Any], model: type[BaseModel]) -> None:
    """A request model the routes read by hand (strict JSON), with its sub-schemas."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, sub in schema.pop("$defs", {}).items():
        schemas.setdefault(name, sub)
    schemas[model.__name__] = schema


def _limits(schemas: dict[str, Any], qs: QuerySettings) -> None:
    props = schemas["SearchRequest"]["properties"]
    props["top_k"]["maximum"] = qs.ranking.max_top_k
    queries = next(s for s in props["queries"]["anyOf"] if s.get("type") == "array")
    queries["maxItems"] = qs.ranking.max_queries


def _operations(doc: dict[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, op


def _document_id_param(description: str) -> dict[str, Any]:
    return {
        "name": "document_id",
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", "pattern": DOCUMENT_ID_PATTERN, "maxLength": 576},
        "example": "wiki:handbook/security.md",
    }


def build_openapi(app: FastAPI, qs: QuerySettings) -> dict[str, Any]:
    doc = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Problem"] = _problem_schema()
    _add_model(schemas, SearchRequest)
    _limits(schemas, qs)
    doc["components"]["securitySchemes"] = {
        "bearerAuth": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "tenant, groups and subject come from the verified token only",
        }
    }
    for path, op in _operations(doc):
        # FastAPI adds a 422 "HTTPValidationError" to routes with parameters: ours is ours
        responses = op.get("responses", {})
        if path.startswith("/v1/"):
            op["security"] = [{"bearerAuth": []}]
        for code, resp in responses.items():
            if code.isdigit() and int(code) >= 400:
                resp["content"] = {PROBLEM: {"schema": _PROBLEM_REF}}
        for param in op.get("parameters", []):
            if param.get("name") == "document_id":
                param.update(_document_id_param(param.get("description", "a document id")))
    return doc
