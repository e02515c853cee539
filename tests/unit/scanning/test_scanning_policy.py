"""Policy resolution: built-in defaults, layering, file loading, validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragline.errors import ConfigError
from ragline.events import Classification, TrustLevel
from ragline.scanning.entities import GROUPS, NER_ENTITIES
from ragline.scanning.policy import PolicyContext, PolicyRule, PolicySet


def ctx(**kw: object) -> PolicyContext:
    base: dict[str, object] = {
        "tenant_id": "acme",
        "source": "wiki",
        "source_type": "wiki",
        "classification": Classification.INTERNAL,
        "trust": TrustLevel.MEDIUM,
    }
    base.update(kw)
    return PolicyContext(**base)  # type: ignore[arg-type]


def test_defaults_internal_medium_trust() -> None:
    p = PolicySet.default().resolve(ctx())
    assert p.name == "default"
    assert p.secret_action("aws_access_key") == "redact"
    for e in (*GROUPS["contact"], *GROUPS["financial"], *GROUPS["national_id"]):
        assert p.pii_action(e) == "redact", e
    assert p.pii_action("IP_ADDRESS") == "tag"
    assert p.pii_action("PERSON") == "off"
    plan = p.plan()
    assert not plan.needs_ner and "EMAIL_ADDRESS" in plan.pii_patterns
    assert "US_SSN" in plan.pii_patterns and "PERSON" not in plan.pii_patterns


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"trust": TrustLevel.LOW}, "default+low-trust"),
        ({"classification": Classification.CONFIDENTIAL}, "default+confidential"),
        ({"classification": Classification.RESTRICTED, "trust": TrustLevel.LOW},
         "default+low-trust+confidential"),
    ],
)  # fmt: skip
def test_names_tagged_for_low_trust_and_confidential(kw: dict, name: str) -> None:
    p = PolicySet.default().resolve(ctx(**kw))
    assert p.name == name
    assert p.pii_action("PERSON") == "tag"
    assert p.plan().ner_entities == ("PERSON",)


def test_file_rules_layer_on_defaults_most_specific_wins(tmp_path: Path) -> None:
    f = tmp_path / "policy.yaml"
    f.write_text(
        """
rules:
  - name: hr
    match: {tenants: [hr], classifications: [confidential, restricted]}
    secrets: {"*": block}
    pii: {"*": redact, national_id: block, US_SSN: tag, IP_ADDRESS: "off"}
    min_score: 0.6
  - name: hr-tickets
    match: {tenants: [hr], source_types: [ticket]}
    secrets: {jwt: redact}
    injection_threshold: 1
"""
    )
    ps = PolicySet.from_file(f)
    p = ps.resolve(ctx(tenant_id="hr", classification=Classification.CONFIDENTIAL))
    assert p.name == "default+confidential+hr"
    assert p.secret_action("anything") == "block"
    assert p.pii_action("PERSON") == "redact"  # "*" in a later rule overrides earlier tags
    assert p.pii_action("UK_NHS") == "block"  # group beats "*"
    assert p.pii_action("US_SSN") == "tag"  # entity beats group
    assert p.pii_action("IP_ADDRESS") == "off"
    assert p.min_score == 0.6
    assert set(p.plan().ner_entities) == set(NER_ENTITIES)
    t = ps.resolve(
        ctx(tenant_id="hr", classification=Classification.CONFIDENTIAL, source_type="ticket")
    )
    assert t.secret_action("jwt") == "redact" and t.secret_action("aws_access_key") == "block"
    assert t.injection_threshold == 1
    # other tenants are untouched
    assert ps.resolve(ctx(classification=Classification.CONFIDENTIAL)).min_score == 0.4
    assert p.fingerprint != t.fingerprint


def test_replace_defaults_and_json(tmp_path: Path) -> None:
    f = tmp_path / "policy.json"
    f.write_text(
        json.dumps(
            {"replace_defaults": True, "rules": [{"name": "only", "pii": {"contact": "tag"}}]}
        )
    )
    p = PolicySet.from_file(f).resolve(ctx(trust=TrustLevel.LOW))
    assert p.name == "only"
    assert p.secret_action("x") == "redact"  # secrets are always at least redacted
    assert p.pii_action("EMAIL_ADDRESS") == "tag" and p.pii_action("US_SSN") == "off"
    assert not p.plan().needs_ner


@pytest.mark.parametrize(
    "body",
    [
        "rules: [{name: x, secrets: {'*': tag}}]",  # secrets can not be kept
        "rules: [{name: x, secrets: {'*': 'off'}}]",
        "rules: [{name: x, pii: {SHOE_SIZE: redact}}]",  # unknown entity
        "rules: [{name: x, pii: {EMAIL_ADDRESS: shred}}]",  # unknown action
        "rules: [{name: x, match: {trust: [sky-high]}}]",
        "rules: [{name: 'Bad Name'}]",
        "rules: [{name: x, surprise: 1}]",  # typo'd keys are errors, not ignored
        "version: 2\nrules: []",
        "[not, a, mapping]",
    ],
)
def test_invalid_policy_files_are_config_errors(tmp_path: Path, body: str) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(body)
    with pytest.raises(ConfigError):
        PolicySet.from_file(f)


def test_missing_file_and_empty_rules() -> None:
    with pytest.raises(ConfigError):
        PolicySet.from_file(Path("/nonexistent/policy.yaml"))
    with pytest.raises(ConfigError):
        PolicySet(())


def test_may_need_ner() -> None:
    assert PolicySet.default().may_need_ner()
    assert not PolicySet((PolicyRule(name="x", pii={"contact": "redact"}),)).may_need_ner()
    assert PolicySet((PolicyRule(name="x", pii={"*": "tag"}),)).may_need_ner()
