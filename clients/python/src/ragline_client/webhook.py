"""Send source changes to the connector webhook (``POST /v1/changes``), signed.

Signing follows Standard Webhooks (https://www.standardwebhooks.com): headers
``webhook-id`` (the change's ``event_id``), ``webhook-timestamp`` (unix seconds) and
``webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``. The key is
the base64 payload of a ``whsec_...`` secret, else the secret's UTF-8 bytes. The secret
never travels. ``auth="bearer"`` sends ``Authorization: Bearer <secret>`` instead.

A change is a mapping (or any pydantic model) in the shape of ragline's ``SourceUpsert``,
``SourceDelete`` or ``SourceAclChange`` events. Without an ``event_id`` one is assigned
before the first attempt, so a retried delivery is the same event, not a second one.

    with ChangeWebhook("http://connector:8081", secret=os.environ["WEBHOOK_SECRET"]) as hook:
        hook.send({"event_type": "source.delete", "tenant_id": "acme",
                   "document_id": "wiki:42", "source_seq": 7})
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from ragline_client._closing import AsyncClosing, SyncClosing
from ragline_client._transport import USER_AGENT, Request, parse, send_async, send_sync
from ragline_client.retry import RetryPolicy

__all__ = [
    "AsyncChangeWebhook",
    "ChangeWebhook",
    "WebhookAuth",
    "WebhookReceipt",
    "sign_standard",
    "signature_headers",
    "verify_standard",
]

WebhookAuth = Literal["standard", "bearer"]
_PREFIX = "whsec_"
DEFAULT_TOLERANCE_S = 300


class WebhookReceipt(BaseModel):
    """The connector's 202 answer."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    event_id: str
    event_type: str
    document_id: str
    topic: str | None = None
    duplicate: bool = Field(
        default=False, description="the webhook-id was seen before: nothing republished"
    )
    priority: Literal["interactive", "bulk"] = Field(
        default="interactive",
        description="the lane the change was published in: bulk when it was sent as bulk or "
        "its tenant was over the interactive budget (processed after everyone's "
        "interactive work, nothing dropped); absent from older connectors: interactive",
    )


def _key(secret: str) -> bytes:
    if not secret:
        raise ValueError("the webhook secret is empty")
    if secret.startswith(_PREFIX):
        try:
            return base64.b64decode(secret[len(_PREFIX) :], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("a whsec_ secret must be base64 after the prefix") from exc
    return secret.encode()


def sign_standard(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,<base64 HMAC-SHA256>``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_headers(
    secret: str, msg_id: str, body: bytes, *, now: float | None = None
) -> dict[str, str]:
    ts = int(time.time() if now is None else now)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sign_standard(secret, msg_id, ts, body),
    }


def verify_standard(
    secrets: Iterable[str],
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> bool:
    """Receiver side (for tests and for products receiving ragline's own webhooks): any of
    the space-separated ``v1,`` signatures matches under any of ``secrets`` (rotation),
    and the timestamp is within ``tolerance_s`` of now."""
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id, ts_text = lower.get("webhook-id"), lower.get("webhook-timestamp", "")
    if not msg_id or not ts_text.isascii() or not ts_text.isdigit() or len(ts_text) > 12:
        return False
    ts = int(ts_text)
    if abs((time.time() if now is None else now) - ts) > tolerance_s:
        return False
    given = [s for s in lower.get("webhook-signature", "").split() if s.startswith("v1,")]
    for secret in secrets:
        expected = sign_standard(secret, msg_id, ts, body).encode()
        if any(hmac.compare_digest(expected, g.encode()) for g in given):
            return True
    return False


def _prepare(change: Mapping[str, Any] | BaseModel) -> tuple[str, bytes]:
    if isinstance(change, BaseModel):
        data: dict[str, Any] = json.loads(change.model_dump_json())
    elif isinstance(change, Mapping):
        data = dict(change)
    else:
        raise TypeError("a change is a mapping or a pydantic model")
    event_id = data.get("event_id") or str(uuid.uuid4())
    if not isinstance(event_id, str):
        raise TypeError("event_id must be a string")
    data["event_id"] = event_id
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str)
    return event_id, body.encode()


class _WebhookBase:
    def __init__(
        self, base_url: str, secret: str, auth: WebhookAuth, retry: RetryPolicy | None
    ) -> None:
        if auth not in ("standard", "bearer"):
            raise ValueError("auth is 'standard' or 'bearer'")
        _key(secret)  # fail fast on an unusable secret
        self.base_url = base_url.rstrip("/")
        self.auth = auth
        self.retry = retry or RetryPolicy()
        self._secret = secret
        self._clock: Callable[[], float] = time.time

    def _request(self, change: Mapping[str, Any] | BaseModel, timeout: Any) -> Request:
        event_id, body = _prepare(change)
        if self.auth == "bearer":
            return Request(
                "POST",
                "/v1/changes",
                body=body,
                headers={"Authorization": f"Bearer {self._secret}"},
                authenticated=False,
                timeout=timeout,
            )

        def sign(payload: bytes) -> dict[str, str]:
            return signature_headers(self._secret, event_id, payload, now=self._clock())

        # the event id makes a resent change the same event: safe to retry
        return Request(
            "POST", "/v1/changes", body=body, authenticated=False, timeout=timeout, signer=sign
        )

    def _http_options(self, timeout: float | httpx.Timeout, transport: Any) -> dict[str, Any]:
        headers = {"User-Agent": USER_AGENT}
        return {
            "base_url": self.base_url,
            "timeout": timeout,
            "transport": transport,
            "headers": headers,
        }

    def __repr__(self) -> str:  # never the secret
        return f"{type(self).__name__}({self.base_url!r}, auth={self.auth!r})"


class ChangeWebhook(_WebhookBase, SyncClosing):
    def __init__(
        self,
        base_url: str,
        *,
        secret: str,
        auth: WebhookAuth = "standard",
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, secret, auth, retry)
        self._http = httpx.Client(**self._http_options(timeout, transport))

    def send(
        self, change: Mapping[str, Any] | BaseModel, *, timeout: float | None = None
    ) -> WebhookReceipt:
        resp = send_sync(self._http, self._request(change, timeout), self.retry, None)
        return parse(resp, WebhookReceipt)

    def close(self) -> None:
        self._http.close()


class AsyncChangeWebhook(_WebhookBase, AsyncClosing):
    def __init__(
        self,
        base_url: str,
        *,
        secret: str,
        auth: WebhookAuth = "standard",
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, secret, auth, retry)
        self._http = httpx.AsyncClient(**self._http_options(timeout, transport))

    async def send(
        self, change: Mapping[str, Any] | BaseModel, *, timeout: float | None = None
    ) -> WebhookReceipt:
        resp = await send_async(self._http, self._request(change, timeout), self.retry, None)
        return parse(resp, WebhookReceipt)

    async def aclose(self) -> None:
        await self._http.aclose()
