"""The HTTP webhook source: ``POST /v1/changes`` publishes one SourceChange event.

Authentication is a shared secret, sent either as ``Authorization: Bearer <secret>`` or
as ``X-Ragline-Signature: sha256=<hex HMAC-SHA256 of the raw body keyed by the secret>``
(the form to use when the secret must not travel). Answers: 202 with the event id,
401 bad auth, 403 tenant not allowed, 413 too large, 422 invalid (with the failing
field), 503 when the broker is down. Error bodies never echo the submitted values.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter, ValidationError

from ragline.connector.metrics import WEBHOOK_REQUESTS
from ragline.connector.settings import ConnectorSettings
from ragline.connector.source import EventSink
from ragline.errors import BackendUnavailable, ConfigError
from ragline.events import SourceChange, SourceUpsert, Topics

__all__ = ["SIGNATURE_HEADER", "create_app", "sign"]

SIGNATURE_HEADER = "X-Ragline-Signature"
_TAGS = frozenset({"source.upsert", "source.delete", "source.acl"})
_MAX_ERRORS = 20


def sign(secret: str, body: bytes) -> str:
    """The signature header value a caller sends: ``sha256=<hex>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _problem(status: int, error: str, reason: str, **extra: Any) -> JSONResponse:
    WEBHOOK_REQUESTS.labels(str(status)).inc()
    return JSONResponse({"error": error, "reason": reason, **extra}, status_code=status)


def _field(loc: tuple[int | str, ...]) -> str:
    parts = list(loc)
    if parts and parts[0] in _TAGS:  # the discriminated union's branch name
        parts = parts[1:]
    return ".".join(str(p) for p in parts) or "body"


def _validation_problem(exc: ValidationError) -> JSONResponse:
    errors = [
        {"field": _field(e["loc"]), "type": e["type"], "message": e["msg"]}
        for e in exc.errors(include_url=False, include_input=False, include_context=False)
    ][:_MAX_ERRORS]
    for e in errors:
        if e["type"] == "union_tag_not_found" or e["type"] == "union_tag_invalid":
            e["field"] = "event_type"
    return _problem(
        422,
        "invalid",
        f"{errors[0]['field']}: {errors[0]['message']}",
        field=errors[0]["field"],
        errors=errors,
    )


def _authenticate(request: Request, body: bytes, secret: str) -> str | None:
    """None when authenticated, else the reason."""
    auth = request.headers.get("authorization")
    signature = request.headers.get(SIGNATURE_HEADER)
    if signature is not None:
        if hmac.compare_digest(signature.strip().encode(), sign(secret, body).encode()):
            return None
        return f"{SIGNATURE_HEADER} does not match the body (expected sha256=<hex hmac>)"
    if auth is not None:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return "Authorization must be 'Bearer <secret>'"
        if hmac.compare_digest(token.strip().encode(), secret.encode()):
            return None
        return "bearer token is not valid"
    return f"missing credentials: send 'Authorization: Bearer <secret>' or '{SIGNATURE_HEADER}'"


async def _read_limited(request: Request, limit: int) -> bytes | None:
    buf = bytearray()
    async for piece in request.stream():
        buf += piece
        if len(buf) > limit:
            return None
    return bytes(buf)


def create_app(
    cfg: ConnectorSettings,
    publisher_factory: Callable[[], AbstractAsyncContextManager[EventSink]],
) -> FastAPI:
    """``publisher_factory`` opens the sink for the app's lifetime (an EventPublisher)."""
    if cfg.webhook_secret is None or not cfg.webhook_secret.get_secret_value():
        raise ConfigError("the webhook needs RAGLINE_CONNECTOR_WEBHOOK_SECRET")
    secret = cfg.webhook_secret.get_secret_value()
    adapter: TypeAdapter[Any] = TypeAdapter(SourceChange)
    sink: dict[str, EventSink] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with publisher_factory() as pub:
            sink["pub"] = pub
            yield
            sink.clear()

    app = FastAPI(title="ragline connector webhook", version="1", lifespan=lifespan)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/changes", status_code=202)
    async def post_change(request: Request) -> JSONResponse:
        limit = cfg.webhook_max_body_bytes
        declared = request.headers.get("content-length")
        too_big = f"body exceeds {limit} bytes"
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return _problem(413, "too_large", too_big, limit=limit)
        body = await _read_limited(request, limit)
        if body is None:
            return _problem(413, "too_large", too_big, limit=limit)
        reason = _authenticate(request, body, secret)
        if reason is not None:
            return _problem(401, "unauthorized", reason)
        try:
            event = adapter.validate_json(body)
        except ValidationError as exc:
            return _validation_problem(exc)
        if cfg.webhook_tenants and event.tenant_id not in cfg.webhook_tenants:
            return _problem(403, "forbidden", "tenant not accepted here", field="tenant_id")
        if (
            isinstance(event, SourceUpsert)
            and event.content_ref is not None
            and event.content_ref.kind == "file"
            and not cfg.webhook_allow_file_refs
        ):
            return _problem(
                422,
                "invalid",
                "content_ref.kind: file references are not accepted here",
                field="content_ref.kind",
            )
        if "pub" not in sink:
            return _problem(503, "unavailable", "publisher not ready")
        try:
            await sink["pub"].publish(Topics.SOURCE_CHANGES.value, event)
        except BackendUnavailable:
            return _problem(503, "unavailable", "the event broker is unreachable; retry")
        WEBHOOK_REQUESTS.labels("202").inc()
        return JSONResponse(
            {
                "accepted": True,
                "event_id": event.event_id,
                "event_type": event.event_type,
                "document_id": event.document_id,
                "topic": Topics.SOURCE_CHANGES.value,
            },
            status_code=202,
        )

    return app
