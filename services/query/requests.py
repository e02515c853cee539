"""Reading the query API's inputs so that every input ends in a 4xx naming the field.

The search body is parsed by pydantic in strict JSON mode (no coercion: the OpenAPI
schema is the whole contract), after a stdlib pass that finds what pydantic's parser
would only call "invalid JSON": a lone surrogate escape, with the path to the value.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import SecretStr, ValidationError
from starlette.convertors import Convertor, register_url_convertor

from ragline.config import Settings
from ragline.retrieval.api_models import SearchRequest
from ragline.retrieval.settings import QuerySettings
from ragline_client.text_rules import unsafe_reason, valid_document_id

__all__ = [
    "UnsupportedMediaType",
    "checked_document_id",
    "legacy_status_id",
    "parse_search_request",
    "query_opensearch_settings",
]

_STATUS_SUFFIX = "/status"


class AnyPathConvertor(Convertor[str]):
    """Like Starlette's ``path`` but also across newlines, so an id holding one reaches
    the handler (and gets its 422 naming ``document_id``) instead of an anonymous 404."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anypath", AnyPathConvertor())


class UnsupportedMediaType(Exception):
    """The body is declared as something other than JSON (415)."""


def _error(loc: tuple[str | int, ...], kind: str, msg: str) -> dict[str, Any]:
    return {"loc": loc, "type": kind, "msg": msg}


def _unsafe_strings(value: Any) -> list[dict[str, Any]]:
    """Every string (key or value) holding NUL or a lone surrogate, with its path
    (iterative: the body is capped, but its nesting is not)."""
    found: list[dict[str, Any]] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [(("body",), value)]
    while stack and len(found) < 20:
        loc, v = stack.pop()
        if isinstance(v, str):
            reason = unsafe_reason(v)
            if reason is not None:
                found.append(_error(loc, "string_unsafe", reason))
        elif isinstance(v, dict):
            for k, item in v.items():
                if unsafe_reason(k) is not None:
                    found.append(_error(loc, "key_unsafe", "a key holds NUL or a lone surrogate"))
                    continue
                stack.append(((*loc, k), item))
        elif isinstance(v, list):
            stack.extend(((*loc, i), item) for i, item in enumerate(v))
    return found


async def parse_search_request(request: Request) -> SearchRequest:
    ctype = request.headers.get("content-type")
    if ctype is not None:
        media = ctype.split(";", 1)[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise UnsupportedMediaType(media)
    raw = await request.body()
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        msg = "the body is not valid JSON" if isinstance(exc, ValueError) else "nested too deep"
        raise RequestValidationError([_error(("body",), "json_invalid", msg)]) from None
    unsafe = _unsafe_strings(obj)
    if unsafe:
        raise RequestValidationError(unsafe)
    try:
        return SearchRequest.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in errors]) from None


def checked_document_id(document_id: str) -> str:
    """The id, or a 422 naming ``document_id`` (NUL, a trailing newline, a bad source)."""
    if not valid_document_id(document_id):
        reason = unsafe_reason(document_id) or "not a document id (<source>:<external id>)"
        raise RequestValidationError(
            [_error(("path", "document_id"), "document_id_invalid", reason)]
        )
    return document_id


def legacy_status_id(document_id: str) -> str | None:
    """For the deprecated ``/v1/documents/{id}/status`` form: ``{id}`` when the path ends
    in ``/status`` and the rest is a document id, else None."""
    if not document_id.endswith(_STATUS_SUFFIX):
        return None
    prefix = document_id[: -len(_STATUS_SUFFIX)]
    return prefix if valid_document_id(prefix) else None


def query_opensearch_settings(settings: Settings, qs: QuerySettings) -> Settings:
    """The connection settings with the query service's own (read-only) OpenSearch
    credential when one is configured (``RAGLINE_QUERY_OPENSEARCH_USER``/``_PASSWORD``)."""
    if qs.opensearch_user is None:
        return settings
    password = qs.opensearch_password or SecretStr("")
    return settings.model_copy(
        update={"opensearch_user": qs.opensearch_user, "opensearch_password": password}
    )
