"""Bearer-token verification: a JWT becomes a ``Principal`` (tenant, groups, subject).

The principal is the only source of a request's permissions: nothing in a request body
can widen it.
"""

from ragline.auth.jwt import JwtConfig, JwtVerifier
from ragline.auth.principal import AuthError, Forbidden, Principal
from ragline.auth.tokens import Identity, mint_token

__all__ = [
    "AuthError",
    "Forbidden",
    "Identity",
    "JwtConfig",
    "JwtVerifier",
    "Principal",
    "mint_token",
]
