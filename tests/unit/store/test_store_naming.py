"""Tenant index naming, the strict English mapping, and RLS scope values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.errors import PermanentError
from ragline.store.os_index import chunk_mapping, concrete_name, index_name, tenant_of_index
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


def test_groups_value_sorted_and_safe() -> None:
    assert _groups_value(["b", "a", "b"]) == "a,b"
    with pytest.raises(PermanentError):
        _groups_value(["a,b"])
    with pytest.raises(PermanentError):
        _groups_value([""])
