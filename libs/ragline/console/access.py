"""Who may use the console: a verified token with the admin role, administering a set of
tenants; and the CSRF guard of its mutating actions.

A browser session is the admin token in an HttpOnly, SameSite=Strict cookie; a script
sends the token as a bearer header. Cookies are sent by browsers on their own, so every
mutating request authenticated by the cookie must also carry ``X-CSRF-Token``: an HMAC
of the session under a per-process key, handed out only to the page's own JavaScript
(``/console/api/session``). A bearer request carries no ambient credential and needs no
CSRF token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Any

from ragline.auth.jwt import claim_at
from ragline.auth.principal import AuthError, Forbidden
from ragline.console.settings import ConsoleSettings
from ragline.ops.explain import OperatorRights

__all__ = ["CsrfGuard", "operator_from_claims"]


def operator_from_claims(
    claims: Mapping[str, Any], settings: ConsoleSettings, *, subject: str, tenant: str
) -> OperatorRights:
    """The operator's rights, or ``Forbidden`` when the token lacks the admin role."""
    roles = claim_at(claims, settings.roles_claim)
    if isinstance(roles, str):
        roles = roles.split()
    if not isinstance(roles, list) or settings.admin_role not in roles:
        raise Forbidden("the console needs the admin role")
    tenants = claim_at(claims, settings.admin_tenants_claim)
    if tenants is None:
        return OperatorRights(subject=subject, tenants=frozenset({tenant}))
    if isinstance(tenants, str):
        tenants = [tenants]
    if not isinstance(tenants, list) or not all(isinstance(t, str) for t in tenants):
        raise AuthError(f"the {settings.admin_tenants_claim!r} claim must be a list of tenants")
    if "*" in tenants:
        return OperatorRights(subject=subject, tenants=None)
    return OperatorRights(subject=subject, tenants=frozenset(tenants))


class CsrfGuard:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def token(self, session: str) -> str:
        return hmac.new(self._key, session.encode(), hashlib.sha256).hexdigest()

    def check(self, session: str, given: str | None) -> None:
        if not given or not hmac.compare_digest(self.token(session), given):
            raise Forbidden("missing or wrong CSRF token: reload the page")
