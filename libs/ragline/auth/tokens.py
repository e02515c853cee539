"""Minting HS256 bearer tokens for local use: ``ragline token``, ``ragline up``'s sample
query, the evaluation client and the tests. Production tokens come from the identity
provider; the query service only verifies (``ragline.auth.jwt``)."""

from __future__ import annotations

import time
from typing import Any, Protocol

import jwt

__all__ = ["ADMIN_ROLE", "ROLES_CLAIM", "Identity", "mint_token"]

# the operator console's default admin role and where it is read (RAGLINE_CONSOLE_*)
ADMIN_ROLE = "ragline:admin"
ROLES_CLAIM = "roles"


class Identity(Protocol):
    """Who a token is for: ``ragline.auth.Principal`` or a golden case's principal."""

    @property
    def subject(self) -> str: ...
    @property
    def tenant(self) -> str: ...
    @property
    def groups(self) -> tuple[str, ...]: ...


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
    extra_claims: dict[str, Any] | None = None,
) -> str:
    """``extra_claims``: more claims (e.g. the console's ``roles``); never overrides the
    identity claims above."""
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
    for k, v in (extra_claims or {}).items():
        claims.setdefault(k, v)
    return jwt.encode(claims, secret, algorithm="HS256")
