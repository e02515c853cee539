"""The answer cache's key carries a fingerprint of the ranking settings."""

from __future__ import annotations

import pytest

from ragline.retrieval.settings import QuerySettings


def test_every_setting_is_classified_once() -> None:
    fields = set(QuerySettings.model_fields)
    ranking, other = QuerySettings.RANKING_FIELDS, QuerySettings.NON_RANKING_FIELDS
    assert not ranking & other
    # a new setting must be declared ranking (part of the cache key) or not
    assert fields == ranking | other, sorted(fields ^ (ranking | other))


@pytest.mark.parametrize(
    "change",
    [
        {"rrf_k": 10},
        {"weight_dense": 2.0},
        {"hnsw_ef_search": 40},
        {"abstain_min_similarity": 0.5},
        {"rerank_top_n": 10},
        {"default_max_per_document": 1},
    ],
)
def test_ranking_changes_change_the_fingerprint(change: dict[str, object]) -> None:
    assert QuerySettings(**change).ranking_fingerprint() != QuerySettings().ranking_fingerprint()


def test_operational_changes_keep_it() -> None:
    base = QuerySettings().ranking_fingerprint()
    assert QuerySettings(pool_max_size=30, rate_limit_per_minute=5).ranking_fingerprint() == base
    assert QuerySettings(jwt_secret="x" * 32).ranking_fingerprint() == base
    assert len(base) == 12
