"""Issue 14 settings in the chart: RS256 needs issuer and audience (or a loudly named
override), the audit HMAC key, the query API limits, the query service's read-only
OpenSearch credential and the webhook's scoped credentials, all schema-validated."""

from __future__ import annotations

from typing import Any

import pytest
from _deploy_helpers import Render, by_component, env_of, kinds


def _config(docs: list[dict[str, Any]]) -> dict[str, str]:
    (cm,) = [c for c in kinds(docs, "ConfigMap") if "RAGLINE_KAFKA_BOOTSTRAP" in c["data"]]
    data: dict[str, str] = cm["data"]
    return data


def _env(docs: list[dict[str, Any]], component: str) -> dict[str, dict[str, Any]]:
    return env_of(by_component(docs, "Deployment")[component]["spec"]["template"]["spec"])


@pytest.mark.parametrize(
    "auth",
    [
        {"jwksUrl": "https://idp/jwks"},
        {"jwksUrl": "https://idp/jwks", "issuer": "https://idp/"},
        {"jwksUrl": "https://idp/jwks", "audience": "ragline"},
        {"existingSecret": "", "jwtPublicKey": "-----BEGIN PUBLIC KEY-----"},
        {"algorithm": "RS256"},
    ],
)
def test_rs256_without_issuer_and_audience_does_not_render(
    render: Render, auth: dict[str, str]
) -> None:
    (err,) = render(values={"auth": auth}, fail=True)
    assert "needs auth.issuer and auth.audience" in err["error"]


def test_rs256_override_is_explicit_and_reaches_the_service(render: Render) -> None:
    docs = render(
        values={"auth": {"jwksUrl": "https://idp/jwks", "insecureAllowAnyIssuerAndAudience": True}}
    )
    assert _config(docs)["RAGLINE_QUERY_JWT_INSECURE_ALLOW_ANY_ISSUER_AND_AUDIENCE"] == "true"
    docs = render(
        values={"auth": {"jwksUrl": "https://idp/jwks", "issuer": "https://idp/", "audience": "a"}}
    )
    cfg = _config(docs)
    assert cfg["RAGLINE_QUERY_JWT_ISSUER"] == "https://idp/"
    assert cfg["RAGLINE_QUERY_JWT_AUDIENCE"] == "a"
    assert "RAGLINE_QUERY_JWT_INSECURE_ALLOW_ANY_ISSUER_AND_AUDIENCE" not in cfg


def test_audit_hash_key_is_a_required_secret_of_the_query_service(render: Render) -> None:
    docs = render()
    ref = _env(docs, "query")["RAGLINE_QUERY_AUDIT_HASH_KEY"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "ragline-audit", "key": "hash-key"}  # not optional
    for comp in ("indexer", "connector", "parser"):
        assert "RAGLINE_QUERY_AUDIT_HASH_KEY" not in _env(docs, comp)
    (err,) = render(values={"audit": {"existingSecret": ""}}, fail=True)
    assert "audit: set existingSecret" in err["error"]
    inline = render(values={"audit": {"existingSecret": "", "hashKey": "k" * 32}})
    ref = _env(inline, "query")["RAGLINE_QUERY_AUDIT_HASH_KEY"]["valueFrom"]["secretKeyRef"]
    assert ref["key"] == "audit-hash-key"
    secrets = [s for s in kinds(inline, "Secret") if "audit-hash-key" in s.get("data", {})]
    assert len(secrets) == 1
    assert "k" * 32 not in str(_config(inline))


def test_query_api_limits_come_from_values(render: Render) -> None:
    cfg = _config(render())
    assert (cfg["RAGLINE_QUERY_MAX_TOP_K"], cfg["RAGLINE_QUERY_MAX_QUERIES"]) == ("50", "8")
    assert cfg["RAGLINE_QUERY_MAX_BODY_BYTES"] == "65536"
    assert cfg["RAGLINE_QUERY_MAX_HEADER_BYTES"] == "16384"
    docs = render(values={"queryApi": {"maxTopK": 20, "maxQueries": 4, "maxBodyBytes": 4096}})
    cfg = _config(docs)
    assert (cfg["RAGLINE_QUERY_MAX_TOP_K"], cfg["RAGLINE_QUERY_MAX_QUERIES"]) == ("20", "4")


def test_query_service_gets_its_own_read_only_opensearch_credential(render: Render) -> None:
    docs = render(
        values={
            "opensearch": {"existingSecret": "os-writer", "query": {"existingSecret": "os-reader"}}
        }
    )
    query, indexer = _env(docs, "query"), _env(docs, "indexer")
    for name in ("RAGLINE_QUERY_OPENSEARCH_USER", "RAGLINE_QUERY_OPENSEARCH_PASSWORD"):
        assert query[name]["valueFrom"]["secretKeyRef"]["name"] == "os-reader"
        assert name not in indexer
    assert (
        indexer["RAGLINE_OPENSEARCH_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "os-writer"
    )
    assert "RAGLINE_QUERY_OPENSEARCH_USER" not in _env(render(), "query")


def test_webhook_credentials_replay_window_and_legacy_signature(render: Render) -> None:
    docs = render(values={"connector": {"webhook": {"credentialsKey": "credentials.json"}}})
    env = _env(docs, "connector")
    ref = env["RAGLINE_CONNECTOR_WEBHOOK_CREDENTIALS"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "ragline-connector", "key": "credentials.json"}
    assert "RAGLINE_CONNECTOR_WEBHOOK_CREDENTIALS" not in _env(docs, "query")
    cfg = _config(docs)
    assert cfg["RAGLINE_CONNECTOR_WEBHOOK_REPLAY_WINDOW_S"] == "300"
    assert cfg["RAGLINE_CONNECTOR_WEBHOOK_LEGACY_SIGNATURE"] == "false"


@pytest.mark.parametrize(
    "bad",
    [
        {"queryApi": {"maxTopK": 500}},
        {"queryApi": {"maxQueries": 0}},
        {"queryApi": {"maxBodyBytes": 10}},
        {"queryApi": {"maxHeaderBytes": "16k"}},
        {"auth": {"algorithm": "none"}},
        {"auth": {"insecureAllowAnyIssuerAndAudience": "yes"}},
        {"audit": {"existingSecret": "", "hashKey": "short"}},
        {"audit": {"storeQuery": "plain"}},
        {"connector": {"webhook": {"replayWindowSeconds": 0}}},
        {"connector": {"webhook": {"legacySignature": "true"}}},
        {"opensearch": {"query": {"existingSecret": "r", "surprise": 1}}},
        {"env": {"RAGLINE_QUERY_AUDIT_HASH_KEY": "x"}},
        {"env": {"RAGLINE_CONNECTOR_WEBHOOK_CREDENTIALS": "[]"}},
        {"env": {"RAGLINE_QUERY_OPENSEARCH_PASSWORD": "x"}},
    ],
)
def test_schema_refuses_bad_query_api_values(render: Render, bad: dict[str, Any]) -> None:
    render(values=bad, fail=True)
