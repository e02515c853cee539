"""One filter definition, two renderings: SQL and OpenSearch agree on every predicate."""

from __future__ import annotations

from datetime import date

import pytest
from psycopg import sql
from pydantic import ValidationError

from ragline.retrieval.filters import (
    BoolEquals,
    Effective,
    Range,
    SearchFilters,
    Terms,
    VersionsOrCurrentUnversioned,
    compile_predicates,
    to_opensearch,
    to_sql,
)


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError) as err:
        SearchFilters.model_validate({"source_type": ["wiki"], "acl_groups": ["admin"]})
    assert err.value.errors()[0]["type"] == "extra_forbidden"
    assert err.value.errors()[0]["loc"] == ("acl_groups",)


def test_single_string_is_a_list_and_classification_is_checked() -> None:
    f = SearchFilters.model_validate({"source_type": "wiki", "classification": ["internal"]})
    assert f.source_type == ("wiki",)
    with pytest.raises(ValidationError):
        SearchFilters.model_validate({"classification": ["top-secret"]})


def test_default_scope_only() -> None:
    preds = compile_predicates(None, include_superseded=False, effective_at=date(2025, 1, 1))
    assert preds == [BoolEquals("superseded", False), Effective(date(2025, 1, 1))]
    assert compile_predicates(None, include_superseded=True, effective_at=None) == []


def test_all_fields_compile() -> None:
    f = SearchFilters(
        source_type=("wiki",),
        content_type=("table",),
        document_ids=("kb:1",),
        versions=("4.2",),
        classification=("internal",),  # type: ignore[arg-type]
        effective_from=date(2024, 1, 1),
        effective_to=date(2024, 12, 31),
    )
    preds = compile_predicates(f, include_superseded=True, effective_at=None)
    assert Terms("document_id", ("kb:1",)) in preds
    assert Terms("version", ("4.2",)) in preds
    assert Range("effective_date", gte=date(2024, 1, 1), lte=date(2024, 12, 31)) in preds
    os = to_opensearch(preds)
    assert {"terms": {"document_id": ["kb:1"]}} in os
    assert {"range": {"effective_date": {"gte": "2024-01-01", "lte": "2024-12-31"}}} in os
    where, params = to_sql(preds, "c")
    text = where.as_string(None)
    assert '"c"."document_id" = ANY(%s::text[])' in text
    assert '"c"."effective_date" >= %s' in text and '"c"."effective_date" <= %s' in text
    assert ["kb:1"] in params and date(2024, 1, 1) in params
    # one placeholder per parameter, in order
    assert text.count("%s") == len(params)


def test_effective_renders_open_ended_dates() -> None:
    preds = [Effective(date(2025, 6, 1))]
    where, params = to_sql(preds, "c")
    assert "IS NULL OR" in where.as_string(None)
    assert params == [date(2025, 6, 1), date(2025, 6, 1)]
    os = to_opensearch(preds)
    assert len(os) == 2
    assert os[0]["bool"]["should"][1] == {"range": {"effective_date": {"lte": "2025-06-01"}}}
    assert os[1]["bool"]["should"][1] == {"range": {"expiry_date": {"gt": "2025-06-01"}}}


def test_empty_sql_is_true() -> None:
    where, params = to_sql([], "c")
    assert isinstance(where, sql.Composable) and where.as_string(None) == "TRUE"
    assert params == []


def test_values_never_reach_the_sql_text() -> None:
    evil = "x'); DROP TABLE chunks; --"
    f = SearchFilters(source_type=(evil,))
    where, params = to_sql(compile_predicates(f, include_superseded=True, effective_at=None), "c")
    assert evil not in where.as_string(None)
    assert params == [[evil]]


def test_inferred_version_lets_current_unversioned_rows_pass() -> None:
    day = date(2026, 3, 1)
    f = SearchFilters(versions=("4.2",), document_ids=("kb:1",))
    strict = compile_predicates(f, include_superseded=True, effective_at=None)
    loose = compile_predicates(f, include_superseded=True, effective_at=None, unversioned_at=day)
    assert Terms("version", ("4.2",)) in strict
    assert VersionsOrCurrentUnversioned(("4.2",), day) in loose
    assert Terms("document_id", ("kb:1",)) in loose  # only the version term loosens
    assert not any(isinstance(p, Terms) and p.column == "version" for p in loose)
    where, params = to_sql(loose, "c")
    text = where.as_string(None)
    assert (
        '("c"."version" = ANY(%s::text[]) OR ("c"."version" IS NULL AND "c"."superseded" = false'
        ' AND ("c"."effective_date" IS NULL OR "c"."effective_date" <= %s)'
        ' AND ("c"."expiry_date" IS NULL OR "c"."expiry_date" > %s)))'
    ) in text
    assert text.count("%s") == len(params) and params.count(day) == 2
    (clause,) = [c for c in to_opensearch(loose) if "bool" in c]
    should = clause["bool"]["should"]
    assert should[0] == {"terms": {"version": ["4.2"]}}
    unversioned = should[1]["bool"]["filter"]
    assert {"bool": {"must_not": [{"exists": {"field": "version"}}]}} in unversioned
    assert {"term": {"superseded": False}} in unversioned
    assert len(unversioned) == 4  # + effective and expiry checks
    assert {"terms": {"version": ["4.2"]}} in to_opensearch(strict)
