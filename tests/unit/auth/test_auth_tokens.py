"""Local token minting (``ragline.auth.tokens``): claims, claim names, signature; the
minted token is accepted by the query service's verifier."""

from __future__ import annotations

import jwt
import pytest

from ragline.auth import JwtConfig, JwtVerifier, Principal, mint_token
from ragline.evaluation.datasets import Principal as CasePrincipal

SECRET = "s3cret-for-tests-only-32-bytes-long!"
ALICE = CasePrincipal(subject="alice", tenant="acme", groups=("staff", "engineering"))


def test_mint_token_claims() -> None:
    tok = mint_token(ALICE, SECRET, ttl_s=120, now=1_000_000, audience="rag", issuer="eval")
    claims = jwt.decode(
        tok, SECRET, algorithms=["HS256"], audience="rag", options={"verify_exp": False}
    )
    assert claims == {
        "sub": "alice",
        "tenant": "acme",
        "groups": ["staff", "engineering"],
        "iat": 1_000_000,
        "exp": 1_000_120,
        "aud": "rag",
        "iss": "eval",
    }
    other = mint_token(ALICE, SECRET, tenant_claim="org", groups_claim="roles", now=0)
    claims = jwt.decode(other, SECRET, algorithms=["HS256"], options={"verify_exp": False})
    assert claims["org"] == "acme" and claims["roles"] == ["staff", "engineering"]
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(
            tok,
            "wrong-secret-that-is-long-enough-too!",
            algorithms=["HS256"],
            options={"verify_exp": False},
        )


def test_a_minted_token_verifies_as_the_same_principal() -> None:
    who = Principal(tenant="acme", groups=("eng", "all"), subject="bob")
    verifier = JwtVerifier(JwtConfig(hs256_secret=SECRET))
    assert verifier.verify(mint_token(who, SECRET)) == who
