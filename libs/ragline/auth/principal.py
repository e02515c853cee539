"""Who is asking: the verified tenant, groups and subject of a request."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragline.errors import RaglineError

__all__ = ["AuthError", "Forbidden", "Principal"]

# always fullmatch: with re.match, ``$`` also matches before a trailing newline
_TENANT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_GROUP_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}")
# subjects are opaque (emails, UUIDs, service names) but end up in the audit log: no
# control characters (NUL cannot even be stored), no lone surrogates, bounded
_SUBJECT_RE = re.compile(r"[^\x00-\x1f\x7f-\x9f\ud800-\udfff]{1,256}")


class AuthError(RaglineError):
    """The credentials are missing, malformed, expired or not signed by a trusted key (401).

    The message names the failed check, never the token.
    """


class Forbidden(RaglineError):
    """The credentials are valid but grant nothing usable (403)."""


@dataclass(frozen=True, kw_only=True)
class Principal:
    """A verified caller. ``groups`` is sorted and unique so scopes compare and hash stably."""

    tenant: str
    groups: tuple[str, ...]
    subject: str

    def __post_init__(self) -> None:
        if not _TENANT_RE.fullmatch(self.tenant):
            raise AuthError("tenant claim is not a valid tenant id")
        bad = [g for g in self.groups if not _GROUP_RE.fullmatch(g)]
        if bad:
            raise AuthError("groups claim holds an invalid group name")
        if not _SUBJECT_RE.fullmatch(self.subject):
            raise AuthError("subject claim holds control characters or is too long")
        object.__setattr__(self, "groups", tuple(sorted(set(self.groups))))

    @property
    def scope_key(self) -> str:
        """Tenant + sorted groups: what a permission-scoped cache must key on."""
        return f"{self.tenant}|{','.join(self.groups)}"
