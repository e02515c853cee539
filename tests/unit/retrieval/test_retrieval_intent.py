"""Version and time intent."""

from __future__ import annotations

from datetime import date

from ragline.retrieval.filters import SearchFilters
from ragline.retrieval.intent import parse_intent, version_variants

TODAY = date(2026, 3, 1)


def _intent(q: str, **kw):  # type: ignore[no-untyped-def]
    return parse_intent(
        (q,),
        kw.get("filters"),
        as_of=kw.get("as_of"),
        include_history=kw.get("include_history", False),
        today=TODAY,
        known_versions=frozenset(kw.get("known", {"3.9", "4.2", "2.0"})),
    )


def test_default_is_current() -> None:
    i = _intent("how do I rotate keys")
    assert i.scope.mode == "current" and i.effective_at == TODAY
    assert not i.include_superseded and len(i.searches) == 1
    assert "current version" in i.scope.note


def test_version_in_query_restricts() -> None:
    i = _intent("what changed in the API in version 4.2?")
    assert i.scope.mode == "explicit" and i.scope.versions == ["4.2"]
    assert set(i.searches[0].versions or ()) == {"4.2", "v4.2", "V4.2"}
    assert i.include_superseded and i.effective_at is None
    # inferred from the text: documents without any version still qualify when current
    assert i.searches[0].unversioned_at == TODAY and "unversioned" in i.scope.note


def test_comparison_fans_out_per_version() -> None:
    i = _intent("compare v3.9 vs v4.2 rate limits")
    assert i.scope.mode == "compare"
    assert [s.label for s in i.searches] == ["3.9", "4.2"]
    assert "v3.9" in (i.searches[0].versions or ())
    # each side is its version plus the current unversioned documents (ADR 0005)
    assert all(s.unversioned_at == TODAY for s in i.searches)


def test_filter_comparison_is_strict() -> None:
    i = _intent("compare rate limits", filters=SearchFilters(versions=("3.9", "4.2")))
    assert i.scope.mode == "compare" and i.scope.source == "filters"
    assert all(s.unversioned_at is None for s in i.searches)


def test_filters_win_over_text() -> None:
    i = _intent("rate limits in v1", filters=SearchFilters(versions=("2.0",)))
    assert i.scope.versions == ["2.0"] and i.scope.source == "filters"
    assert i.searches[0].unversioned_at is None  # a client's filter is strict


def test_as_of_from_text_and_request() -> None:
    i = _intent("vacation policy as of 2024")
    assert i.scope.mode == "as_of" and i.effective_at == date(2024, 12, 31)
    assert i.include_superseded and i.resolve_series_at == date(2024, 12, 31)
    i = _intent("policy as of 2024-05-02")
    assert i.effective_at == date(2024, 5, 2)
    i = _intent("policy", as_of=date(2023, 1, 1))
    assert i.scope.source == "request" and i.effective_at == date(2023, 1, 1)
    i = _intent("policy as of 2030")  # future years clamp to today
    assert i.effective_at == TODAY


def test_history() -> None:
    i = _intent("policy", include_history=True)
    assert i.scope.mode == "history" and i.include_superseded and i.effective_at is None


def test_no_false_versions() -> None:
    assert _intent("error 4711 with 2024 units and 3.5 liters").scope.mode == "current"
    # "in 2024" is a period (time_intent's grammar), never a version
    i = _intent("error 4711 in 2024 and 3.5 liters")
    assert i.scope.versions == [] and i.scope.mode == "as_of"
    assert i.effective_at == date(2024, 12, 31)
    # a cued version the corpus lacks restricts nothing and is reported
    i = _intent("the v8 engine is a version of ...")
    assert i.scope.mode == "current" and i.scope.unresolved == ["8"]


def test_variants() -> None:
    assert version_variants("v2") == ("v2", "2", "V2")
    assert version_variants("2.1") == ("2.1", "v2.1", "V2.1")


def _known(q: str, known: set[str]):  # type: ignore[no-untyped-def]
    return parse_intent(
        (q,),
        None,
        as_of=None,
        include_history=False,
        today=TODAY,
        known_versions=frozenset(known),
    )


def test_bare_number_is_a_version_only_when_the_corpus_has_it() -> None:
    i = _known("What is the default rate limit in Acme Gateway 3.9?", {"3.9", "4.2"})
    assert i.scope.mode == "explicit" and i.scope.versions == ["3.9"]
    assert "3.9" in (i.searches[0].versions or ())
    # the same words with no such version in the corpus: no restriction
    assert _known("Acme Gateway 3.9 limits", {"4.2"}).scope.mode == "current"
    # measurements are not versions even when the label exists
    assert _known("a timeout of 4.2% or 10.5,3", {"4.2", "10.5"}).scope.mode == "current"


def test_bare_versions_compare() -> None:
    i = _known("what changed between gateway 3.9 and 4.2?", {"v3.9", "4.2"})
    # labels come back as the corpus spells them
    assert i.scope.mode == "compare" and {s.label for s in i.searches} == {"v3.9", "4.2"}
