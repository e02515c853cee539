"""Webhook credentials: several, each bound to the tenants and document-id prefixes
(sources) it may write, checked in one of three forms:

- Standard Webhooks (https://www.standardwebhooks.com): ``webhook-id``,
  ``webhook-timestamp`` and ``webhook-signature: v1,<base64 HMAC-SHA256 of
  "{id}.{timestamp}.{body}">``; a timestamp outside the replay window is refused and an
  id already seen inside it is answered as a duplicate (nothing republished). A secret
  written ``whsec_<base64>`` is used as the decoded bytes, as that scheme specifies.
- ``Authorization: Bearer <secret>`` for simple callers (TLS carries the secret).
- deprecated: ``X-Ragline-Signature: sha256=<hex HMAC of the body>`` (no timestamp, so
  replayable; ``RAGLINE_CONNECTOR_WEBHOOK_LEGACY_SIGNATURE=false`` refuses it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ragline.errors import ConfigError

__all__ = [
    "LEGACY_SIGNATURE_HEADER",
    "AuthFailure",
    "Authenticated",
    "WebhookAuthenticator",
    "WebhookCredential",
    "parse_credentials",
    "sign",
    "sign_standard",
]

LEGACY_SIGNATURE_HEADER = "X-Ragline-Signature"
_TENANT = r"^[a-z0-9][a-z0-9_-]{0,62}$"
_MIN_SECRET = 16
_SIGNATURE_V1 = re.compile(r"v1,([A-Za-z0-9+/=]+)")


def _key_of(secret: str) -> bytes:
    if secret.startswith("whsec_"):
        try:
            return base64.b64decode(secret[len("whsec_") :], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ConfigError("a whsec_ webhook secret is not valid base64") from exc
    return secret.encode()


def sign(secret: str, body: bytes) -> str:
    """The deprecated ``X-Ragline-Signature`` value: ``sha256=<hex>``."""
    return "sha256=" + hmac.new(_key_of(secret), body, hashlib.sha256).hexdigest()


def sign_standard(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value of the Standard Webhooks scheme."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key_of(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


class _CredentialSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    secret: str = Field(min_length=_MIN_SECRET)
    tenants: tuple[str, ...] = Field(default=(), description="empty: any tenant")
    document_id_prefixes: tuple[str, ...] = Field(
        default=(), description="e.g. 'crm:'; empty: any document id"
    )


@dataclass(frozen=True, kw_only=True)
class WebhookCredential:
    id: str
    secret: str = field(repr=False)
    tenants: tuple[str, ...] = ()
    document_id_prefixes: tuple[str, ...] = ()

    @property
    def key(self) -> bytes:
        return _key_of(self.secret)

    def refusal(self, tenant_id: str, document_id: str) -> tuple[str, str] | None:
        """``(field, reason)`` when this credential may not write the event, else None."""
        if self.tenants and tenant_id not in self.tenants:
            return "tenant_id", "tenant not accepted for this credential"
        if self.document_id_prefixes and not document_id.startswith(self.document_id_prefixes):
            return "document_id", "document id outside this credential's sources"
        return None


def parse_credentials(text: str) -> tuple[WebhookCredential, ...]:
    """A JSON list of ``{id, secret, tenants, document_id_prefixes}`` (the value of
    ``RAGLINE_CONNECTOR_WEBHOOK_CREDENTIALS`` or its file). Errors never echo secrets."""
    try:
        specs = TypeAdapter(list[_CredentialSpec]).validate_json(text)
    except ValidationError as exc:
        where = ", ".join(".".join(str(p) for p in e["loc"]) for e in exc.errors())
        raise ConfigError(f"webhook credentials are invalid at: {where}") from None
    tenant_re = re.compile(_TENANT)
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise ConfigError("webhook credential ids must be unique")
    out = []
    for s in specs:
        if any(not tenant_re.fullmatch(t) for t in s.tenants):
            raise ConfigError(f"webhook credential {s.id!r}: invalid tenant id")
        if any(":" not in p or not p.strip() for p in s.document_id_prefixes):
            raise ConfigError(
                f"webhook credential {s.id!r}: prefixes start with the source, e.g. 'crm:'"
            )
        _key_of(s.secret)
        out.append(
            WebhookCredential(
                id=s.id,
                secret=s.secret,
                tenants=s.tenants,
                document_id_prefixes=s.document_id_prefixes,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Authenticated:
    credential: WebhookCredential
    message_id: str | None = None  # Standard Webhooks id (idempotency key)
    duplicate: bool = False


class AuthFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WebhookAuthenticator:
    def __init__(
        self,
        credentials: Sequence[WebhookCredential],
        *,
        replay_window_s: int = 300,
        legacy_signature: bool = True,
        clock: Callable[[], float] = time.time,
        max_remembered: int = 100_000,
    ) -> None:
        if not credentials:
            raise ConfigError("the webhook needs at least one credential")
        self._creds = tuple(credentials)
        self._window = replay_window_s
        self._legacy = legacy_signature
        self._clock = clock
        self._seen: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._max = max_remembered

    def authenticate(self, headers: Mapping[str, str], body: bytes) -> Authenticated:
        """Raises ``AuthFailure`` with a reason that never echoes a secret."""
        if "webhook-signature" in headers or "webhook-id" in headers:
            return self._standard(headers, body)
        legacy = headers.get(LEGACY_SIGNATURE_HEADER.lower())
        if legacy is not None:
            if not self._legacy:
                raise AuthFailure(
                    f"{LEGACY_SIGNATURE_HEADER} is disabled: use the webhook-id, "
                    "webhook-timestamp and webhook-signature headers"
                )
            for c in self._creds:
                if hmac.compare_digest(legacy.strip().encode(), sign(c.secret, body).encode()):
                    return Authenticated(c)
            raise AuthFailure(f"{LEGACY_SIGNATURE_HEADER} does not match the body")
        auth = headers.get("authorization")
        if auth is not None:
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AuthFailure("Authorization must be 'Bearer <secret>'")
            given = token.strip().encode()
            for c in self._creds:
                if hmac.compare_digest(given, c.secret.encode()):
                    return Authenticated(c)
            raise AuthFailure("bearer token is not valid")
        raise AuthFailure(
            "missing credentials: send webhook-id/webhook-timestamp/webhook-signature "
            "(Standard Webhooks) or 'Authorization: Bearer <secret>'"
        )

    def _standard(self, headers: Mapping[str, str], body: bytes) -> Authenticated:
        msg_id = headers.get("webhook-id", "")
        ts_text = headers.get("webhook-timestamp", "")
        signatures = headers.get("webhook-signature", "")
        if not msg_id or not ts_text or not signatures:
            raise AuthFailure("webhook-id, webhook-timestamp and webhook-signature are required")
        if len(msg_id) > 256 or not msg_id.isprintable():
            raise AuthFailure("webhook-id is not a printable id of at most 256 characters")
        if not ts_text.isascii() or not ts_text.isdigit() or len(ts_text) > 12:
            raise AuthFailure("webhook-timestamp must be integer seconds since the epoch")
        now = self._clock()
        if abs(now - int(ts_text)) > self._window:
            raise AuthFailure(f"webhook-timestamp is outside the {self._window}s replay window")
        given = [m.group(1) for m in map(_SIGNATURE_V1.fullmatch, signatures.split()) if m]
        for c in self._creds:
            expected = sign_standard(c.secret, msg_id, int(ts_text), body)[3:].encode()
            if any(hmac.compare_digest(expected, g.encode()) for g in given):
                return Authenticated(c, msg_id, self._seen_recently(c.id, msg_id, now))
        raise AuthFailure("webhook-signature does not match (v1,<base64 HMAC-SHA256>)")

    def _seen_recently(self, cred: str, msg_id: str, now: float) -> bool:
        """True when this id was already published inside the replay window."""
        while self._seen:
            oldest_key, seen_at = next(iter(self._seen.items()))
            if now - seen_at <= 2 * self._window and len(self._seen) <= self._max:
                break
            del self._seen[oldest_key]
        return (cred, msg_id) in self._seen

    def record(self, auth: Authenticated) -> None:
        """Call once the event is published: a resend of the same id is then a duplicate
        (a failed publish is not recorded, so the sender's retry goes through)."""
        if auth.message_id is not None:
            self._seen[(auth.credential.id, auth.message_id)] = self._clock()
