"""JWT verification: HS256, RS256 (PEM and JWKS file), claim mapping, tampering, expiry."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ragline.auth import AuthError, Forbidden, JwtConfig, JwtVerifier, Principal
from ragline.errors import ConfigError

SECRET = "unit-test-secret-0123456789abcdef-xyz"


def _hs(claims: dict, secret: str = SECRET) -> str:
    return jwt.encode(claims, secret, algorithm="HS256")


def _claims(**over: object) -> dict:
    base = {"sub": "alice", "tenant": "acme", "groups": ["eng", "all"], "exp": time.time() + 60}
    base.update(over)
    return base


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


ISS, AUD = "https://idp.example", "ragline"
RS = {"issuer": ISS, "audience": AUD}


def _rs_claims(**over: object) -> dict:
    return _claims(**{"iss": ISS, "aud": AUD, **over})


def _pem(key: rsa.RSAPrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def test_hs256_principal_from_claims() -> None:
    p = JwtVerifier(JwtConfig(hs256_secret=SECRET)).verify(_hs(_claims()))
    assert p == Principal(tenant="acme", groups=("all", "eng"), subject="alice")
    assert p.scope_key == "acme|all,eng"


@pytest.mark.parametrize(
    "token_factory, message",
    [
        (lambda: _hs(_claims(exp=time.time() - 120)), "expired"),
        (lambda: _hs(_claims(), secret="another-secret-0123456789abcdef-xyz"), "signature"),
        (lambda: _hs(_claims())[:-3] + "abc", "signature"),
        (lambda: "not-a-token", "malformed"),
        (lambda: _hs({"sub": "a", "tenant": "acme", "groups": ["g"]}), "invalid"),  # no exp
        (lambda: _hs(_claims(tenant=None)), "tenant"),
        (lambda: _hs(_claims(tenant="Bad Tenant!")), "tenant"),
        (lambda: _hs(_claims(groups="eng")) + "x", "signature"),
        (lambda: jwt.encode(_claims(), None, algorithm="none"), "algorithm"),
    ],
)
def test_rejected_tokens(token_factory, message: str) -> None:
    with pytest.raises(AuthError, match=message):
        JwtVerifier(JwtConfig(hs256_secret=SECRET)).verify(token_factory())


def test_tampered_payload_is_rejected() -> None:
    token = _hs(_claims())
    head, _payload, sig = token.split(".")
    forged = jwt.utils.base64url_encode(
        json.dumps({**_claims(), "groups": ["finance"]}).encode()
    ).decode()
    with pytest.raises(AuthError, match="signature"):
        JwtVerifier(JwtConfig(hs256_secret=SECRET)).verify(f"{head}.{forged}.{sig}")


def test_no_groups_is_forbidden() -> None:
    with pytest.raises(Forbidden):
        JwtVerifier(JwtConfig(hs256_secret=SECRET)).verify(_hs(_claims(groups=[])))


def test_configurable_claim_names_and_nested_groups() -> None:
    cfg = JwtConfig(
        hs256_secret=SECRET, tenant_claim="org", groups_claim="realm.roles", subject_claim="uid"
    )
    token = _hs({"uid": "bob", "org": "acme", "realm": {"roles": ["x"]}, "exp": time.time() + 9})
    assert JwtVerifier(cfg).verify(token) == Principal(tenant="acme", groups=("x",), subject="bob")


def test_audience_and_issuer_enforced() -> None:
    cfg = JwtConfig(hs256_secret=SECRET, audience="ragline", issuer="https://idp")
    ok = _hs(_claims(aud="ragline", iss="https://idp"))
    assert JwtVerifier(cfg).verify(ok).subject == "alice"
    with pytest.raises(AuthError):
        JwtVerifier(cfg).verify(_hs(_claims(aud="other", iss="https://idp")))
    with pytest.raises(AuthError):
        JwtVerifier(cfg).verify(_hs(_claims(aud="ragline", iss="https://evil")))


def test_rs256_public_key(rsa_key: rsa.RSAPrivateKey) -> None:
    v = JwtVerifier(JwtConfig(rs256_public_key=_pem(rsa_key), **RS))
    token = jwt.encode(_rs_claims(), rsa_key, algorithm="RS256")
    assert v.verify(token).tenant == "acme"
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(AuthError):
        v.verify(jwt.encode(_rs_claims(), other, algorithm="RS256"))


def test_rs256_key_cannot_be_used_as_hs256_secret(rsa_key: rsa.RSAPrivateKey) -> None:
    """Algorithm confusion: an HS256 token signed with the public PEM must not verify."""
    pem = _pem(rsa_key)
    v = JwtVerifier(JwtConfig(rs256_public_key=pem, **RS))
    import hashlib
    import hmac

    head = jwt.utils.base64url_encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = jwt.utils.base64url_encode(json.dumps(_rs_claims()).encode())
    sig = hmac.new(pem.encode(), head + b"." + body, hashlib.sha256).digest()
    forged = b".".join([head, body, jwt.utils.base64url_encode(sig)]).decode()
    with pytest.raises(AuthError):
        v.verify(forged)


def test_jwks_file(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key()))
    jwk.update({"kid": "k1", "use": "sig", "alg": "RS256"})
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk]}))
    v = JwtVerifier(JwtConfig(jwks_file=path, **RS))
    token = jwt.encode(_rs_claims(), rsa_key, algorithm="RS256", headers={"kid": "k1"})
    assert v.verify(token).subject == "alice"
    unknown = jwt.encode(_rs_claims(), rsa_key, algorithm="RS256", headers={"kid": "k2"})
    with pytest.raises(AuthError):
        v.verify(unknown)


def test_config_errors() -> None:
    with pytest.raises(ConfigError):
        JwtVerifier(JwtConfig())
    with pytest.raises(ConfigError):
        JwtVerifier(JwtConfig(hs256_secret="short"))
    assert "unit-test-secret" not in repr(JwtConfig(hs256_secret=SECRET))


@pytest.mark.parametrize(
    "missing", [{}, {"issuer": ISS}, {"audience": AUD}, {"issuer": "", "audience": ""}]
)
def test_rs256_requires_issuer_and_audience(rsa_key: rsa.RSAPrivateKey, missing: dict) -> None:
    """Issue 14, defect 6: a shared identity provider's key alone admits every token it
    ever minted for any application; RS256/JWKS refuses to start without iss and aud."""
    for key in ({"rs256_public_key": _pem(rsa_key)}, {"jwks_url": "https://idp/jwks"}):
        with pytest.raises(ConfigError, match="ISSUER and RAGLINE_QUERY_JWT_AUDIENCE"):
            JwtVerifier(JwtConfig(**key, **missing))


def test_insecure_override_is_explicit_and_loud(
    rsa_key: rsa.RSAPrivateKey, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = JwtConfig(rs256_public_key=_pem(rsa_key), insecure_allow_any_issuer_and_audience=True)
    with caplog.at_level("WARNING", logger="ragline.auth"):
        v = JwtVerifier(cfg)
    assert "checks are OFF" in caplog.text
    assert v.verify(jwt.encode(_claims(aud="another-app"), rsa_key, algorithm="RS256"))


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"aud": "another-app"}, "InvalidAudienceError"),
        ({"iss": "https://other-idp"}, "InvalidIssuerError"),
        ({"aud": None}, "MissingRequiredClaimError"),
        ({"iss": None}, "MissingRequiredClaimError"),
    ],
)
def test_rs256_token_of_another_application_is_refused(
    rsa_key: rsa.RSAPrivateKey, over: dict, message: str
) -> None:
    claims = {k: v for k, v in _rs_claims(**over).items() if v is not None}
    v = JwtVerifier(JwtConfig(rs256_public_key=_pem(rsa_key), **RS))
    with pytest.raises(AuthError, match=message):
        v.verify(jwt.encode(claims, rsa_key, algorithm="RS256"))


@pytest.mark.parametrize(
    "claims",
    [
        {"tenant": "acme\n"},
        {"groups": ["eng\n"]},
        {"groups": ["eng", "all\n"]},
        {"tenant": "acme\x00"},
        {"sub": "alice\x00"},
        {"sub": "alice\n"},
        {"sub": "\ud800"},
        {"sub": "x" * 257},
        {"tenant": "\u0430cme"},  # Cyrillic a
    ],
)
def test_claims_are_full_matches(claims: dict) -> None:
    """Issue 14, defect 2: ``$`` with re.match let ``acme\\n`` through as tenant ``acme``."""
    with pytest.raises(AuthError):
        JwtVerifier(JwtConfig(hs256_secret=SECRET)).verify(_hs(_claims(**claims)))


def test_principal_fullmatch_property() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.text(max_size=70), st.sampled_from(["\n", "\r\n", "\x00", " "]))
    def check(text: str, tail: str) -> None:
        with pytest.raises(AuthError):
            Principal(tenant="acme" + tail, groups=("eng",), subject="s")
        with pytest.raises(AuthError):
            Principal(tenant="acme", groups=("eng" + tail,), subject="s")
        try:
            p = Principal(tenant=text, groups=("eng",), subject="s")
        except AuthError:
            return
        assert p.tenant == text and "\n" not in text

    check()
