"""The answer cache's key carries a fingerprint of the ranking settings
(``RankingSettings``), and the query settings split into parts under the same variables."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragline.retrieval.settings import (
    AuditSettings,
    QueryAuthSettings,
    QuerySettings,
    RankingSettings,
    RateLimitSettings,
)


def test_the_default_fingerprint_is_unchanged_by_the_split() -> None:
    # the value before the settings were split (hand-kept field list): cached answers of
    # an unchanged configuration stay valid across the upgrade (later fields at the value
    # that behaves as before they existed are not in it; issue 20 changed the identifier
    # rule's defaults, so the defaults' fingerprint moved then)
    before = {
        "score_norm": "minmax",
        "abstain_identifier_missing_min_similarity": 0.40,
        "abstain_identifier_missing_min_share": 0.0,
    }
    assert RankingSettings(**before).fingerprint() == "b63edabcb648"
    assert RankingSettings().fingerprint() != "b63edabcb648"
    assert (
        RankingSettings(rrf_k=10, rerank_model_path="/x/y", **before).fingerprint()  # type: ignore[arg-type]
        == "7193f38bf4f5"
    )


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
