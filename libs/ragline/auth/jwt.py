"""JWT verification: HS256 with a shared secret (local use), RS256 with a public key or a
JWKS (file or URL) for production. Claim names are configurable.

Each algorithm is bound to its own key material, so a token cannot pick its key by
choosing an algorithm (no HS256-signed-with-the-public-key confusion, never ``none``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt as pyjwt

from ragline.auth.principal import AuthError, Forbidden, Principal
from ragline.errors import ConfigError

__all__ = ["JwtConfig", "JwtVerifier", "claim_at"]

_log = logging.getLogger("ragline.auth")


@dataclass(frozen=True, kw_only=True)
class JwtConfig:
    hs256_secret: str | None = None
    rs256_public_key: str | None = None  # PEM text
    jwks_file: Path | None = None
    jwks_url: str | None = None
    tenant_claim: str = "tenant"
    groups_claim: str = "groups"
    subject_claim: str = "sub"
    issuer: str | None = None
    audience: str | None = None
    leeway_s: float = 30.0
    jwks_cache_s: int = 300
    # RS256/JWKS keys usually belong to a shared identity provider: without iss and aud
    # checks a token minted for any other application would be accepted
    insecure_allow_any_issuer_and_audience: bool = False

    @property
    def asymmetric(self) -> bool:
        return bool(self.rs256_public_key or self.jwks_file or self.jwks_url)

    def __repr__(self) -> str:  # never print key material
        return (
            f"JwtConfig(hs256={self.hs256_secret is not None}, "
            f"rs256_key={self.rs256_public_key is not None}, jwks_file={self.jwks_file}, "
            f"jwks_url={self.jwks_url}, tenant_claim={self.tenant_claim!r}, "
            f"groups_claim={self.groups_claim!r})"
        )


def claim_at(claims: Mapping[str, Any], path: str) -> Any:
    """A claim by name; dotted names reach into nested objects (``realm_access.roles``)."""
    if path in claims:
        return claims[path]
    cur: Any = claims
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


class JwtVerifier:
    """``verify(token) -> Principal`` or ``AuthError``/``Forbidden``."""

    def __init__(self, config: JwtConfig) -> None:
        if not (
            config.hs256_secret or config.rs256_public_key or config.jwks_file or config.jwks_url
        ):
            raise ConfigError(
                "no JWT key configured: set RAGLINE_QUERY_JWT_SECRET (HS256), "
                "RAGLINE_QUERY_JWT_PUBLIC_KEY or RAGLINE_QUERY_JWT_JWKS_FILE/URL (RS256)"
            )
        if config.hs256_secret is not None and len(config.hs256_secret) < 32:
            raise ConfigError("the HS256 secret must be at least 32 characters (RFC 7518)")
        if config.asymmetric and not (config.issuer and config.audience):
            if not config.insecure_allow_any_issuer_and_audience:
                raise ConfigError(
                    "RS256/JWKS needs RAGLINE_QUERY_JWT_ISSUER and RAGLINE_QUERY_JWT_AUDIENCE "
                    "(tokens of other applications of the identity provider would be "
                    "accepted); RAGLINE_QUERY_JWT_INSECURE_ALLOW_ANY_ISSUER_AND_AUDIENCE=true "
                    "overrides this"
                )
            _log.warning(
                "JWT issuer/audience checks are OFF "
                "(RAGLINE_QUERY_JWT_INSECURE_ALLOW_ANY_ISSUER_AND_AUDIENCE): any token signed "
                "by the identity provider is accepted"
            )
        self._config = config
        self._jwks: pyjwt.PyJWKSet | None = None
        if config.jwks_file is not None:
            try:
                self._jwks = pyjwt.PyJWKSet.from_dict(json.loads(config.jwks_file.read_text()))
            except (OSError, ValueError, pyjwt.PyJWTError) as exc:
                raise ConfigError(f"cannot load the JWKS file: {type(exc).__name__}") from exc
        self._jwks_client = (
            pyjwt.PyJWKClient(config.jwks_url, cache_keys=True, lifespan=config.jwks_cache_s)
            if config.jwks_url
            else None
        )

    @property
    def needs_io(self) -> bool:
        """True when verification may fetch keys over the network (run it off the loop)."""
        return self._jwks_client is not None

    def _key_for(self, token: str) -> tuple[Any, str]:
        try:
            header = pyjwt.get_unverified_header(token)
        except pyjwt.PyJWTError as exc:
            raise AuthError("malformed token") from exc
        alg = header.get("alg")
        cfg = self._config
        if alg == "HS256" and cfg.hs256_secret:
            return cfg.hs256_secret, alg
        if alg == "RS256":
            kid = header.get("kid")
            if self._jwks is not None and isinstance(kid, str):
                try:
                    return self._jwks[kid].key, alg
                except KeyError:
                    pass
            if self._jwks_client is not None:
                try:
                    return self._jwks_client.get_signing_key_from_jwt(token).key, alg
                except pyjwt.PyJWKClientError as exc:
                    raise AuthError("no trusted key for this token") from exc
            if cfg.rs256_public_key:
                return cfg.rs256_public_key, alg
        raise AuthError("token algorithm or key id is not accepted")

    def verify(self, token: str) -> Principal:
        return self._principal(self.verify_claims(token))

    def verify_claims(self, token: str) -> dict[str, Any]:
        """The verified claims themselves (for role checks such as the console's admin
        role); ``verify`` turns them into a ``Principal``."""
        key, alg = self._key_for(token)
        cfg = self._config
        required = ["exp"]
        if cfg.issuer:
            required.append("iss")
        if cfg.audience:
            required.append("aud")
        options: pyjwt.types.Options = {"require": required, "verify_aud": bool(cfg.audience)}
        try:
            claims = pyjwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=cfg.audience or None,
                issuer=cfg.issuer or None,
                leeway=cfg.leeway_s,
                options=options,
            )
        except pyjwt.ExpiredSignatureError as exc:
            raise AuthError("token expired") from exc
        except pyjwt.InvalidSignatureError as exc:
            raise AuthError("bad token signature") from exc
        except pyjwt.PyJWTError as exc:
            raise AuthError(f"invalid token: {type(exc).__name__}") from exc
        return dict(claims)

    async def verify_async(self, token: str) -> Principal:
        if self.needs_io:
            return await asyncio.to_thread(self.verify, token)
        return self.verify(token)

    async def verify_claims_async(self, token: str) -> dict[str, Any]:
        if self.needs_io:
            return await asyncio.to_thread(self.verify_claims, token)
        return self.verify_claims(token)

    def principal(self, claims: Mapping[str, Any]) -> Principal:
        """The principal of already verified claims."""
        return self._principal(claims)

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        cfg = self._config
        tenant = claim_at(claims, cfg.tenant_claim)
        subject = claim_at(claims, cfg.subject_claim)
        groups = claim_at(claims, cfg.groups_claim)
        if not isinstance(tenant, str) or not tenant:
            raise AuthError(f"token has no {cfg.tenant_claim!r} claim")
        if not isinstance(subject, str) or not subject:
            raise AuthError(f"token has no {cfg.subject_claim!r} claim")
        if isinstance(groups, str):
            groups = [g for g in groups.split(",") if g]
        if groups is None:
            groups = []
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise AuthError(f"the {cfg.groups_claim!r} claim must be a list of strings")
        principal = Principal(tenant=tenant, groups=tuple(groups), subject=subject)
        if not principal.groups:
            raise Forbidden("the token grants no groups: nothing would be visible")
        return principal
