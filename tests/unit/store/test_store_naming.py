"""Tenant index naming, the strict English mapping, and RLS scope values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.errors import PermanentError
from ragline.store.os_index import (
    BM25_B,
    BM25_K1,
    MAPPING_VERSION,
    chunk_mapping,
    concrete_name,
    index_name,
    tenant_of_index,
)
from ragline.store.rls import _groups_value

TENANTS = st.from_regex(r"^[a-z0-9][a-z0-9_-]{0,62}$", fullmatch=True)


@given(TENANTS)
def test_index_name_round_trips(tenant: str) -> None:
    name = index_name("ragline", tenant)
    assert name == name.lower() and tenant_of_index("ragline", name) == tenant
    assert "." not in name and "." in concrete_name(name, 0)


@pytest.mark.parametrize("bad", ["", "UPPER", "a.b", "-lead", "a/b", "x" * 64])
def test_index_name_rejects_non_slugs(bad: str) -> None:
    with pytest.raises(PermanentError):
        index_name("ragline", bad)


def test_mapping_is_strict_with_english_text() -> None:
    m = chunk_mapping()["mappings"]
    assert m["dynamic"] == "strict"
    for field in ("text", "title", "contextual_header", "section_path"):
        assert m["properties"][field]["analyzer"] == "english"
    for field in ("acl_groups", "tenant_id", "document_id", "classification", "version"):
        assert m["properties"][field]["type"] == "keyword"


def test_body_is_scored_by_the_tuned_bm25() -> None:
    """The lexical leg searches ``body``; its similarity is a named BM25 with the tuned
    k1 / b, declared in the index settings (an undeclared name fails index creation)."""
    full = chunk_mapping()
    body = full["mappings"]["properties"]["body"]
    sims = full["settings"]["similarity"]
    assert body["analyzer"] == "english" and body["similarity"] in sims
    assert sims[body["similarity"]] == {"type": "BM25", "k1": BM25_K1, "b": BM25_B}
    assert 0 < BM25_K1 < 1.2 and 0 <= BM25_B <= 1  # below Lucene's default k1: measured
    assert full["mappings"]["_meta"]["ragline_mapping_version"] == MAPPING_VERSION >= 3


def test_groups_value_sorted_and_safe() -> None:
    assert _groups_value(["b", "a", "b"]) == "a,b"
    with pytest.raises(PermanentError):
        _groups_value(["a,b"])
    with pytest.raises(PermanentError):
        _groups_value([""])
