"""Cache keys: scope, request, day and index version are exact; vectors are unit length."""

from __future__ import annotations

from datetime import date
from typing import Any

import numpy as np

from ragline.auth.principal import Principal
from ragline.cache.keys import entry_key
from ragline.retrieval.cache_seam import CacheKey

DAY = date(2025, 3, 1)


def key(
    *,
    tenant: str = "acme",
    groups: tuple[str, ...] = ("eng", "all"),
    queries: tuple[str, ...] = ("how do I reset the vpn",),
    vectors: int = 1,
    **request: Any,
) -> CacheKey:
    req: dict[str, Any] = {"mode": "hybrid", "top_k": 10, "filters": None}
    req.update(request)
    rng = np.random.default_rng(7)
    return CacheKey(
        principal=Principal(tenant=tenant, groups=groups, subject="u1"),
        queries=queries,
        vectors=tuple(rng.normal(size=384).astype(np.float32) * 3 for _ in range(vectors)),
        request=req,
    )


def ek(k: CacheKey, *, version: str = "m@r#1", day: date = DAY) -> Any:
    return entry_key(k, index_version=version, today=day)


def test_scope_hash_is_tenant_plus_sorted_groups() -> None:
    a = ek(key(groups=("eng", "all")))
    assert a.scope_hash == ek(key(groups=("all", "eng", "eng"))).scope_hash
    assert a.groups == ("all", "eng")
    assert a.scope_hash != ek(key(groups=("eng",))).scope_hash
    assert a.scope_hash != ek(key(groups=("all", "eng", "hr"))).scope_hash
    assert a.scope_hash != ek(key(tenant="other")).scope_hash
    # the subject is not part of the scope: two users with the same groups share entries
    other_user = key()
    other_user = CacheKey(
        principal=Principal(tenant="acme", groups=("all", "eng"), subject="u2"),
        queries=other_user.queries,
        vectors=other_user.vectors,
        request=other_user.request,
    )
    assert ek(other_user).identity == a.identity


def test_request_hash_covers_filters_top_k_mode_and_the_day() -> None:
    base = ek(key())
    assert base.request_hash == ek(key()).request_hash
    assert base.request_hash != ek(key(filters={"versions": ["4.2"]})).request_hash
    assert base.request_hash != ek(key(top_k=5)).request_hash
    assert base.request_hash != ek(key(mode="dense")).request_hash
    assert base.request_hash != ek(key(), day=date(2025, 3, 2)).request_hash
    assert base.request_hash == ek(key(queries=("something else",))).request_hash


def test_index_version_is_kept_apart() -> None:
    assert ek(key(), version="a@1#1").identity != ek(key(), version="b@1#1").identity


def test_query_vector_is_normalized_and_only_for_single_vector_semantic_keys() -> None:
    v = ek(key()).vector
    assert v is not None and abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    assert ek(key(mode="lexical", vectors=0)).vector is None
    assert ek(key(queries=("a", "b"), vectors=2)).vector is None  # fan-out: exact only


def test_query_hash_is_normalized_text() -> None:
    def qh(q: str) -> str:
        return str(ek(key(queries=(q,))).query_hash)

    assert qh("Reset the VPN?") == qh("reset  the vpn")
    assert qh("reset the vpn") != qh("reset the vpn now")


def test_zero_vector_falls_back_to_exact_matching() -> None:
    k = key()
    zero = CacheKey(
        principal=k.principal,
        queries=k.queries,
        vectors=(np.zeros(384, dtype=np.float32),),
        request=k.request,
    )
    assert ek(zero).vector is None
