"""The answer cache's key carries a fingerprint of every ranking setting
(``RankingSettings``) at every value, and the query settings split into parts under the
same variables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
import pytest
from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

import ragline.retrieval.settings as settings_module
from ragline.retrieval.settings import (
    AuditSettings,
    QueryAuthSettings,
    QuerySettings,
    RankingSettings,
    RateLimitSettings,
)


def _hashed(rs: RankingSettings, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The values ``fingerprint()`` hashes (the text handed to the hash, parsed back)."""
    seen: list[str] = []
    real = settings_module.sha256_hex

    def spy(text: str) -> str:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(settings_module, "sha256_hex", spy)
    rs.fingerprint()
    monkeypatch.undo()
    (text,) = seen
    out: dict[str, Any] = json.loads(text)
    return out


def _other_value(name: str, info: FieldInfo) -> object:
    """A valid value of the field other than its default, from its type and bounds; a
    field of a type this does not know fails the test, so nobody adds a ranking field
    the fingerprint test silently skips."""
    default = info.default
    ann = info.annotation
    args = [a for a in get_args(ann) if a is not type(None)]
    ge = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
    le = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
    if get_origin(ann) is Literal:
        return next(a for a in get_args(ann) if a != default)
    if ann is bool:
        return not default
    if ann is int:
        return default + 1 if le is None or default + 1 <= le else default - 1
    if ann is float or (default is None and args == [float]):
        base = 0.5 if default is None else default
        up = base + 0.25
        return up if le is None or up <= le else max(base - 0.25, ge or 0.0)
    if default is None and args == [Path]:
        return Path("/models/other")
    raise AssertionError(f"{name}: teach _other_value its type {ann}")


# the old code left these out of the hash at the value that "behaved as before they
# existed"; every field is in it at every value now
_OLD_EXCLUSIONS = {
    "score_norm": "minmax",
    "abstain_identifier_missing_min_similarity": 0.40,
    "abstain_identifier_missing_min_share": 0.0,
}


@pytest.mark.parametrize("name", sorted(RankingSettings.model_fields))
def test_every_ranking_field_is_in_the_fingerprint(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Derived from the model: a field added to ``RankingSettings`` is checked here
    without being named, at its default and at another value."""
    info = RankingSettings.model_fields[name]
    other = RankingSettings(**{name: _other_value(name, info)})
    assert other.fingerprint() != RankingSettings().fingerprint()
    for rs in (RankingSettings(), other):
        hashed = _hashed(rs, monkeypatch)
        assert hashed[name] == json.loads(json.dumps(getattr(rs, name), default=str))
        assert hashed.keys() == RankingSettings.model_fields.keys()


def test_old_behaviour_values_are_not_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    rs = RankingSettings(**_OLD_EXCLUSIONS)  # type: ignore[arg-type]
    hashed = _hashed(rs, monkeypatch)
    assert {k: hashed.get(k) for k in _OLD_EXCLUSIONS} == _OLD_EXCLUSIONS
    assert rs.fingerprint() != RankingSettings().fingerprint()


# QuerySettings' own fields: none changes which results a search returns or their order
# (a new one that does belongs in RankingSettings, where the fingerprint covers it)
_OPERATIONAL = {
    "max_body_bytes", "max_header_bytes", "opensearch_user", "opensearch_password",
    "embedding_cache_size", "torch_threads", "rerank_timeout_s", "backend_timeout_s",
    "pool_min_size", "pool_max_size",
}  # fmt: skip
_NOT_RANKING_PARTS = {"auth", "audit", "rate_limit"}


def test_every_query_setting_is_ranking_or_says_why_not() -> None:
    """A field added to ``QuerySettings`` itself, or a new part, fails here until it is
    put in ``RankingSettings`` (then the fingerprint has it) or named operational."""
    parts = {n for n, f in QuerySettings.model_fields.items() if _is_part(f.annotation)}
    assert parts == _NOT_RANKING_PARTS | {"ranking"}
    own = set(QuerySettings.model_fields) - parts
    assert own == _OPERATIONAL, f"classify: {sorted(own ^ _OPERATIONAL)}"


def _is_part(ann: object) -> bool:
    return isinstance(ann, type) and issubclass(ann, BaseSettings)


@pytest.mark.parametrize(
    "change",
    [
        {"rrf_k": 10},
        {"weight_dense": 2.0},
        {"hnsw_ef_search": 40},
        {"abstain_min_similarity": 0.5},
        {"rerank_top_n": 10},
        {"default_max_per_document": 1},
        {"score_norm": "minmax"},
        {"abstain_identifier_missing_min_similarity": 0.35},
        {"abstain_identifier_missing_min_share": 0.5},
    ],
)
def test_ranking_changes_change_the_fingerprint(change: dict[str, object]) -> None:
    changed = QuerySettings.from_fields(**change).ranking.fingerprint()
    assert changed != QuerySettings().ranking.fingerprint()


def test_operational_changes_keep_it() -> None:
    base = QuerySettings().ranking.fingerprint()
    qs = QuerySettings.from_fields(pool_max_size=30, rate_limit_per_minute=5, jwt_secret="x" * 32)
    assert qs.ranking.fingerprint() == base
    assert len(base) == 12


def test_parts_read_the_same_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "RAGLINE_QUERY_RRF_K": "7",
        "RAGLINE_QUERY_JWT_ISSUER": "https://idp",
        "RAGLINE_QUERY_AUDIT_STORE_QUERY": "text",
        "RAGLINE_QUERY_RATE_LIMIT_BURST": "9",
        "RAGLINE_QUERY_POOL_MAX_SIZE": "4",
    }.items():
        monkeypatch.setenv(name, value)
    qs = QuerySettings()
    assert qs.ranking.rrf_k == 7 and qs.auth.jwt_issuer == "https://idp"
    assert qs.audit.audit_store_query == "text" and qs.rate_limit.rate_limit_burst == 9
    assert qs.pool_max_size == 4


def test_every_field_lives_in_exactly_one_part() -> None:
    parts = [QueryAuthSettings, RankingSettings, AuditSettings, RateLimitSettings, QuerySettings]
    names = [n for p in parts for n in p.model_fields]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_a_part_field_given_flat_is_refused_not_ignored() -> None:
    with pytest.raises(ValidationError, match="rrf_k: pass ranking=RankingSettings"):
        QuerySettings(rrf_k=3)  # type: ignore[call-arg]
    assert QuerySettings.from_fields(rrf_k=3).ranking.rrf_k == 3
