"""Scan policies: what to do with each finding type, per tenant / source / classification / trust.

A policy is an ordered list of rules. Every rule whose ``match`` fits the document is
applied in order, later rules overriding earlier ones for the keys they name; inside one
rule ``*`` applies first, then groups, then single entities (most specific wins). The
built-in rules (``DEFAULT_RULES``, reasons in docs/scanning.md) come first unless a
policy file sets ``replace_defaults``; a file's rules are layered on top of them.

Actions: secrets ``redact | block``; PII ``redact | tag | block | off``. ``off`` means the
entity is not detected at all, which is how NER stays off where no rule needs names.
Secrets can not be tagged or switched off: a kept secret would reach the index.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragline.errors import ConfigError
from ragline.events import Classification, TrustLevel
from ragline.hashing import sha256_hex
from ragline.scanning.entities import ALL_ENTITIES, GROUPS, NER_ENTITIES, expand
from ragline.scanning.model import DetectPlan

__all__ = [
    "DEFAULT_RULES",
    "EffectivePolicy",
    "PiiAction",
    "PolicyContext",
    "PolicyFile",
    "PolicyMatch",
    "PolicyRule",
    "PolicySet",
    "SecretAction",
]

PiiAction = Literal["redact", "tag", "block", "off"]
SecretAction = Literal["redact", "block"]
_SECRET_KEY = r"^(?:\*|[a-z0-9_]{1,64})$"  # noqa: S105


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PolicyContext(_Frozen):
    tenant_id: str
    source: str
    source_type: str
    classification: Classification
    trust: TrustLevel


class PolicyMatch(_Frozen):
    """Empty lists match anything; all non-empty lists must match."""

    tenants: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    source_types: tuple[str, ...] = ()
    classifications: tuple[Classification, ...] = ()
    trust: tuple[TrustLevel, ...] = ()

    def matches(self, ctx: PolicyContext) -> bool:
        return (
            (not self.tenants or ctx.tenant_id in self.tenants)
            and (not self.sources or ctx.source in self.sources)
            and (not self.source_types or ctx.source_type in self.source_types)
            and (not self.classifications or ctx.classification in self.classifications)
            and (not self.trust or ctx.trust in self.trust)
        )


class PolicyRule(_Frozen):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,47}$")
    match: PolicyMatch = PolicyMatch()
    secrets: dict[str, SecretAction] = Field(default_factory=dict)
    pii: dict[str, PiiAction] = Field(default_factory=dict)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    injection_threshold: int | None = Field(default=None, ge=1)
    injection_strict: bool | None = None

    @field_validator("secrets")
    @classmethod
    def _secret_keys(cls, v: dict[str, SecretAction]) -> dict[str, SecretAction]:
        bad = [k for k in v if not re.match(_SECRET_KEY, k)]
        if bad:
            raise ValueError(f"secret keys must be '*' or snake_case types, got {bad}")
        return v

    @field_validator("pii")
    @classmethod
    def _pii_keys(cls, v: dict[str, PiiAction]) -> dict[str, PiiAction]:
        bad = [k for k in v if not expand(k)]
        if bad:
            raise ValueError(
                f"unknown PII entities/groups {bad}; known groups {sorted(GROUPS)}, "
                f"entities {list(ALL_ENTITIES)}"
            )
        return v


class PolicyFile(_Frozen):
    version: Literal[1] = 1
    replace_defaults: bool = False
    rules: tuple[PolicyRule, ...] = ()


DEFAULT_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(
        name="default",
        secrets={"*": "redact"},
        pii={
            "contact": "redact",
            "financial": "redact",
            "national_id": "redact",
            "network": "tag",
            "names": "off",
            "places": "off",
        },
        min_score=0.4,
    ),
    PolicyRule(name="low-trust", match=PolicyMatch(trust=(TrustLevel.LOW,)), pii={"names": "tag"}),
    PolicyRule(
        name="confidential",
        match=PolicyMatch(classifications=(Classification.CONFIDENTIAL, Classification.RESTRICTED)),
        pii={"names": "tag"},
    ),
)


class EffectivePolicy(_Frozen):
    """The resolved policy for one document context."""

    name: str
    secret_default: SecretAction = "redact"  # noqa: S105
    secret_types: dict[str, SecretAction] = Field(default_factory=dict)
    pii: dict[str, PiiAction] = Field(default_factory=dict)
    min_score: float = 0.4
    injection_threshold: int | None = None
    injection_strict: bool | None = None

    def secret_action(self, type_: str) -> SecretAction:
        return self.secret_types.get(type_, self.secret_default)

    def pii_action(self, entity: str) -> PiiAction:
        return self.pii.get(entity, "off")

    def plan(self) -> DetectPlan:
        active = [e for e in ALL_ENTITIES if self.pii_action(e) != "off"]
        return DetectPlan(
            pii_patterns=tuple(e for e in active if e not in NER_ENTITIES),
            ner_entities=tuple(e for e in active if e in NER_ENTITIES),
            min_score=self.min_score,
        )

    @property
    def fingerprint(self) -> str:
        return sha256_hex(self.model_dump_json())[:12]


def _apply(eff: dict[str, Any], rule: PolicyRule) -> None:
    if "*" in rule.secrets:
        eff["secret_default"] = rule.secrets["*"]
        eff["secret_types"] = {}
    eff["secret_types"].update({k: v for k, v in rule.secrets.items() if k != "*"})
    ordered = sorted(rule.pii.items(), key=lambda kv: (kv[0] != "*", kv[0] not in GROUPS))
    for key, action in ordered:
        for entity in expand(key):
            eff["pii"][entity] = action
    for field in ("min_score", "injection_threshold", "injection_strict"):
        value = getattr(rule, field)
        if value is not None:
            eff[field] = value


class PolicySet:
    """All rules in force; resolves (and caches) the effective policy per context."""

    def __init__(self, rules: tuple[PolicyRule, ...]) -> None:
        if not rules:
            raise ConfigError("a scan policy needs at least one rule")
        self.rules = rules
        self._cache: dict[PolicyContext, EffectivePolicy] = {}

    @classmethod
    def default(cls) -> PolicySet:
        return cls(DEFAULT_RULES)

    @classmethod
    def from_file(cls, path: Path) -> PolicySet:
        try:
            raw = path.read_text(encoding="utf-8")
            data = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
            pf = PolicyFile.model_validate(data)
        except (OSError, ValueError, yaml.YAMLError, ValidationError) as exc:
            raise ConfigError(f"invalid scan policy file {path}: {exc}") from exc
        rules = pf.rules if pf.replace_defaults else DEFAULT_RULES + pf.rules
        return cls(rules)

    def resolve(self, ctx: PolicyContext) -> EffectivePolicy:
        hit = self._cache.get(ctx)
        if hit is not None:
            return hit
        eff: dict[str, Any] = {"secret_types": {}, "pii": {}}
        names: list[str] = []
        for rule in self.rules:
            if rule.match.matches(ctx):
                _apply(eff, rule)
                names.append(rule.name)
        policy = EffectivePolicy(name="+".join(names) or "none", **eff)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[ctx] = policy
        return policy

    def may_need_ner(self) -> bool:
        """Whether any rule turns an NER entity on (then ``start()`` preloads spaCy)."""
        for rule in self.rules:
            for key, action in rule.pii.items():
                if action != "off" and any(e in NER_ENTITIES for e in expand(key)):
                    return True
        return False

    @property
    def fingerprint(self) -> str:
        return sha256_hex(json.dumps([r.model_dump(mode="json") for r in self.rules]))[:12]
