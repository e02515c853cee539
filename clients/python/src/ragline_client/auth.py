"""Token providers: where the client's bearer token comes from.

``StaticToken`` sends one token as is. ``RefreshingToken`` calls your function for a new
token when the current one is within ``leeway_s`` of expiring (the expiry is what the
function returns, else the JWT's ``exp`` claim, else ``default_ttl_s``) and after the
server answered 401 (``invalidate``). The function may be sync or async (async only
with the async client).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias, runtime_checkable

__all__ = [
    "RefreshingToken",
    "StaticToken",
    "TokenLike",
    "TokenProvider",
    "as_provider",
    "jwt_expiry",
]

Fetched: TypeAlias = str | tuple[str, float]
Fetch: TypeAlias = Callable[[], Fetched] | Callable[[], Awaitable[Fetched]]


@runtime_checkable
class TokenProvider(Protocol):
    def get_token(self) -> str: ...
    async def aget_token(self) -> str: ...
    def invalidate(self) -> bool:
        """Forget the current token; True when asking again can give a different one."""
        ...


TokenLike: TypeAlias = str | TokenProvider | Callable[[], Fetched] | None


def jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (unverified: the server verifies), else None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    exp = payload.get("exp") if isinstance(payload, dict) else None
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        return None
    return float(exp)


def _check(token: object) -> str:
    if not isinstance(token, str) or not token.strip():
        raise ValueError("the token provider returned no token")
    if any(c in token for c in "\r\n\x00"):
        raise ValueError("a token must not contain line breaks or NUL")
    return token.strip()


class StaticToken:
    """One token for the client's lifetime."""

    def __init__(self, token: str) -> None:
        self._token = _check(token)

    def get_token(self) -> str:
        return self._token

    async def aget_token(self) -> str:
        return self._token

    def invalidate(self) -> bool:
        return False

    def __repr__(self) -> str:  # never the token itself
        return "StaticToken(***)"


class RefreshingToken:
    """``fetch()`` returns ``token`` or ``(token, expires_at_epoch_s)``; called when needed."""

    def __init__(
        self,
        fetch: Fetch,
        *,
        leeway_s: float = 30.0,
        default_ttl_s: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._fetch = fetch
        self._leeway = leeway_s
        self._default_ttl = default_ttl_s
        self._clock = clock
        self._token: str | None = None
        self._expires = 0.0
        self._lock = threading.Lock()
        self._alock: asyncio.Lock | None = None
        self.fetches = 0

    def _fresh(self) -> str | None:
        if self._token is not None and self._clock() < self._expires - self._leeway:
            return self._token
        return None

    def _store(self, fetched: Fetched) -> str:
        if isinstance(fetched, tuple):
            token, expires = _check(fetched[0]), float(fetched[1])
        else:
            token = _check(fetched)
            exp = jwt_expiry(token)
            expires = exp if exp is not None else self._clock() + self._default_ttl
        self._token, self._expires = token, expires
        self.fetches += 1
        return token

    def get_token(self) -> str:
        with self._lock:
            fresh = self._fresh()
            if fresh is not None:
                return fresh
            got = self._fetch()
            if inspect.isawaitable(got):
                if inspect.iscoroutine(got):
                    got.close()
                raise TypeError("an async token function needs the async client")
            return self._store(got)

    async def aget_token(self) -> str:
        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            fresh = self._fresh()
            if fresh is not None:
                return fresh
            got = self._fetch()
            if inspect.isawaitable(got):
                got = await got
            return self._store(got)

    def invalidate(self) -> bool:
        self._token, self._expires = None, 0.0
        return True

    def __repr__(self) -> str:
        return f"RefreshingToken(fetches={self.fetches})"


def as_provider(token: TokenLike) -> TokenProvider | None:
    if token is None:
        return None
    if isinstance(token, str):
        return StaticToken(token)
    if isinstance(token, TokenProvider):
        return token
    if callable(token):
        return RefreshingToken(token)
    raise TypeError(f"not a token, provider or callable: {type(token).__name__}")
