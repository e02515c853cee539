"""The HTTP webhook source: ``POST /v1/changes`` publishes one SourceChange event.

Callers authenticate with one of several credentials, each bound to the tenants and
document-id prefixes it may write (webhook_auth.py): Standard Webhooks signatures
(``webhook-id``/``webhook-timestamp``/``webhook-signature``, with a replay window),
``Authorization: Bearer <secret>``, or the deprecated ``X-Ragline-Signature``.
Answers: 202 with the event id once the broker acknowledged it (``duplicate: true`` for
a webhook-id already published), 401 bad auth, 403 tenant or source not allowed for the
credential, 413 too large, 422 invalid (with the failing field), 503 with
``Retry-After`` when the broker did not acknowledge within
``webhook_publish_timeout_s`` (down, or electing a leader). Error bodies never echo the
submitted values.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter, ValidationError

from ragline.connector.fairness import InteractiveAdmission, TenantBudget
from ragline.connector.metrics import WEBHOOK_REQUESTS
from ragline.connector.settings import ConnectorSettings
from ragline.connector.source import EventSink
from ragline.connector.webhook_auth import (
    LEGACY_SIGNATURE_HEADER,
    AuthFailure,
    WebhookAuthenticator,
    WebhookCredential,
    parse_credentials,
    sign,
)
from ragline.errors import BackendUnavailable, ConfigError
from ragline.events import SourceChange, SourceUpsert, Topics

__all__ = ["SIGNATURE_HEADER", "create_app", "credentials_of", "sign"]

SIGNATURE_HEADER = LEGACY_SIGNATURE_HEADER
_TAGS = frozenset({"source.upsert", "source.delete", "source.acl"})
_MAX_ERRORS = 20


def _problem(
    status: int, error: str, reason: str, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    WEBHOOK_REQUESTS.labels(str(status)).inc()
    body = {"error": error, "reason": reason, **extra}
    return JSONResponse(body, status_code=status, headers=headers)


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


def credentials_of(cfg: ConnectorSettings) -> tuple[WebhookCredential, ...]:
    """Every configured credential: the scoped list (env or file) plus the single
    ``webhook_secret`` as credential ``default`` (bound to ``webhook_tenants``)."""
    creds: list[WebhookCredential] = []
    if cfg.webhook_credentials is not None:
        creds.extend(parse_credentials(cfg.webhook_credentials.get_secret_value()))
    if cfg.webhook_credentials_file is not None:
        try:
            text = cfg.webhook_credentials_file.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read the webhook credentials file: {exc}") from exc
        creds.extend(parse_credentials(text))
    if cfg.webhook_secret is not None and cfg.webhook_secret.get_secret_value():
        creds.append(
            WebhookCredential(
                id="default",
                secret=cfg.webhook_secret.get_secret_value(),
                tenants=cfg.webhook_tenants,
            )
        )
    if len({c.id for c in creds}) != len(creds):
        raise ConfigError("webhook credential ids must be unique ('default' is webhook_secret)")
    if not creds:
        raise ConfigError(
            "the webhook needs RAGLINE_CONNECTOR_WEBHOOK_SECRET or "
            "RAGLINE_CONNECTOR_WEBHOOK_CREDENTIALS(_FILE)"
        )
    return tuple(creds)


def _accepted(event: Any, *, duplicate: bool) -> JSONResponse:
    return JSONResponse(
        {
            "accepted": True,
            "duplicate": duplicate,
            "event_id": event.event_id,
            "event_type": event.event_type,
            "document_id": event.document_id,
            "topic": Topics.SOURCE_CHANGES.value,
            "priority": event.priority,  # bulk: over the tenant's interactive budget
        },
        status_code=202,
    )


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
    auth = WebhookAuthenticator(
        credentials_of(cfg),
        replay_window_s=cfg.webhook_replay_window_s,
        legacy_signature=cfg.webhook_legacy_signature,
    )
    adapter: TypeAdapter[Any] = TypeAdapter(SourceChange)
    # an upsert over its tenant's interactive budget is published in the bulk lane
    # (docs/lanes.md, "Tenant fairness"): a flood never sits in front of others' edits
    admission = InteractiveAdmission(
        TenantBudget(cfg.tenant_interactive_rate, cfg.tenant_interactive_burst),
        where="webhook",
    )
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
        try:
            who = auth.authenticate(request.headers, body)
        except AuthFailure as exc:
            return _problem(401, "unauthorized", exc.reason)
        try:
            event = adapter.validate_json(body)
        except ValidationError as exc:
            return _validation_problem(exc)
        refused = who.credential.refusal(event.tenant_id, event.document_id)
        if refused is not None:
            return _problem(403, "forbidden", refused[1], field=refused[0])
        if who.duplicate:
            WEBHOOK_REQUESTS.labels("202").inc()
            return _accepted(event, duplicate=True)
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
        retry = {"Retry-After": str(cfg.webhook_retry_after_s)}
        if "pub" not in sink:
            return _problem(503, "unavailable", "publisher not ready", headers=retry)
        event = admission.place(event)
        try:
            # 202 only once the broker acknowledged the write (acks=all): a request that
            # cannot get that in time is refused, never half-accepted. A write the
            # producer still completes after the 503 is one more copy of an idempotent
            # change, which the sender's retry repeats anyway.
            await asyncio.wait_for(
                sink["pub"].publish(Topics.SOURCE_CHANGES.value, event),
                cfg.webhook_publish_timeout_s,
            )
        except (BackendUnavailable, TimeoutError):
            reason = "the event broker is unreachable (no acknowledgement); retry"
            return _problem(503, "unavailable", reason, headers=retry)
        auth.record(who)
        WEBHOOK_REQUESTS.labels("202").inc()
        return _accepted(event, duplicate=False)

    return app
