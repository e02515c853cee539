"""The console's admin check, CSRF guard, dead-letter redaction and wiring (no services)."""

from __future__ import annotations

import pytest

from ragline.auth.principal import AuthError, Forbidden
from ragline.console.access import CsrfGuard, operator_from_claims
from ragline.console.dead_letters import redact_document_id
from ragline.console.settings import ConsoleSettings
from ragline.ops.dlq_select import Selector

CS = ConsoleSettings()


def op(claims: dict[str, object]) -> object:
    return operator_from_claims(claims, CS, subject="s", tenant="acme")


def test_the_admin_role_is_required() -> None:
    for claims in ({}, {"roles": []}, {"roles": ["ragline:reader"]}, {"roles": "admin"}):
        with pytest.raises(Forbidden):
            op(claims)


def test_tenants_default_to_the_tokens_own() -> None:
    rights = operator_from_claims({"roles": ["ragline:admin"]}, CS, subject="s", tenant="acme")
    assert rights.administers("acme") and not rights.administers("other")
    rights = operator_from_claims(
        {"roles": "ragline:admin", "admin_tenants": ["a", "b"]}, CS, subject="s", tenant="acme"
    )
    assert rights.administers("a") and rights.administers("b") and not rights.administers("acme")
    rights = operator_from_claims(
        {"roles": ["ragline:admin"], "admin_tenants": ["*"]}, CS, subject="s", tenant="acme"
    )
    assert rights.tenants is None and rights.administers("anything")
    with pytest.raises(AuthError):
        op({"roles": ["ragline:admin"], "admin_tenants": [1]})


def test_roles_claim_path_is_configurable() -> None:
    cs = ConsoleSettings(roles_claim="realm_access.roles", admin_role="ops")
    rights = operator_from_claims(
        {"realm_access": {"roles": ["ops"]}}, cs, subject="s", tenant="acme"
    )
    assert rights.administers("acme")


def test_csrf_token_is_bound_to_the_session_and_the_process_key() -> None:
    g = CsrfGuard(b"k" * 32)
    t = g.token("session-a")
    g.check("session-a", t)
    for session, given in (("session-b", t), ("session-a", None), ("session-a", t[:-1] + "0")):
        with pytest.raises(Forbidden):
            g.check(session, given)
    with pytest.raises(Forbidden):
        CsrfGuard(b"j" * 32).check("session-a", t)


def test_dead_letter_document_ids_are_redacted() -> None:
    out = redact_document_id("fs:AKIAIOSFODNN7EXAMPLE.txt")
    assert out is not None and out.startswith("fs:") and "AKIA" not in out
    assert redact_document_id("fs:a") != redact_document_id("fs:b")
    assert redact_document_id(None) is None


class _Rec:
    error_class = "E"
    stage = "parser"
    tenant_id = "t"
    document_id = "fs:x"

    @property
    def failed_at(self):  # type: ignore[no-untyped-def]
        from datetime import UTC, datetime

        return datetime(2026, 1, 1, tzinfo=UTC)


def test_dlq_selector_by_document() -> None:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    assert Selector(documents=frozenset({"fs:x"})).matches(_Rec(), now)
    assert not Selector(documents=frozenset({"fs:y"})).matches(_Rec(), now)
    assert not Selector(documents=frozenset({"fs:y"})).selects_all


def test_build_wires_without_opening_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragline.config import Settings
    from services.console.api import PAGES, build

    monkeypatch.setenv("RAGLINE_QUERY_JWT_SECRET", "x" * 40)
    svc = build(Settings())
    assert svc.name == "console"
    paths = {getattr(r, "path", "") for r in svc.app.routes}
    assert "/console/{page}" in paths and len(PAGES) == 7


def test_cli_has_the_console_and_admin_tokens(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    import jwt

    from ragline.cli import build_parser, main

    assert callable(build_parser().parse_args(["console", "--port", "9999"]).func)
    for sub in ("list", "show", "explain"):
        assert callable(
            build_parser()
            .parse_args(
                [
                    "documents",
                    sub,
                    "--tenant",
                    "t",
                    "--document",
                    "d",
                    "--groups",
                    "g",
                    "--query",
                    "q",
                ]
                if sub == "explain"
                else ["documents", sub, "--tenant", "t"]
                + (["--document", "d"] if sub == "show" else [])
            )
            .func
        )
    monkeypatch.setenv("RAGLINE_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("RAGLINE_QUERY_JWT_SECRET", raising=False)
    assert main(["token", "--tenant", "t", "--groups", "g", "--admin", "t", "--admin", "u"]) == 0
    claims = jwt.decode(capsys.readouterr().out.strip(), options={"verify_signature": False})
    rights = operator_from_claims(claims, CS, subject=claims["sub"], tenant="t")
    assert rights.tenants == frozenset({"t", "u"})
    assert main(["token", "--tenant", "t", "--groups", "g"]) == 0
    claims = jwt.decode(capsys.readouterr().out.strip(), options={"verify_signature": False})
    assert "roles" not in claims  # an ordinary token stays ordinary
