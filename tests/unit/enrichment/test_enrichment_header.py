"""The contextual header and its token budget."""

from __future__ import annotations

from datetime import date

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragline.enrichment import build_header
from ragline.text import TokenCounter


def test_title_path_version_and_effective_date(counter: TokenCounter) -> None:
    header = build_header(
        counter,
        budget=40,
        title="Admin Guide",
        section_path=("Admin Guide", "Install", "Upgrades"),
        version="4.2",
        effective_date=date(2024, 3, 1),
    )
    assert header == "Admin Guide > Install > Upgrades (v4.2, effective 2024-03-01)"


def test_without_title_or_path(counter: TokenCounter) -> None:
    assert build_header(counter, budget=40, title=None, section_path=("Intro",)) == "Intro"
    assert build_header(counter, budget=40, title=None, section_path=()) == ""
    assert build_header(counter, budget=40, title="T", section_path=(), version="v2") == "T (v2)"


def test_long_paths_are_elided_in_the_middle(counter: TokenCounter) -> None:
    path = tuple(f"Part {i} about a rather long subject" for i in range(8))
    header = build_header(counter, budget=40, title="Handbook", section_path=path, version="1.0")
    assert counter.count(header) <= 40
    assert header.startswith("Handbook > ") and "…" in header
    assert header.endswith("Part 7 about a rather long subject (v1.0)")


_words = st.text(alphabet="abcdefghij XYZ日本-", min_size=0, max_size=200)


@settings(  # a loaded CI machine must not turn slow generation into a failure
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    title=st.one_of(st.none(), _words),
    path=st.lists(_words, max_size=6),
    version=st.one_of(st.none(), st.text(alphabet="0123456789.v", min_size=1, max_size=12)),
    budget=st.integers(8, 60),
)
def test_the_budget_always_holds(
    counter: TokenCounter, title: str | None, path: list[str], version: str | None, budget: int
) -> None:
    header = build_header(counter, budget=budget, title=title, section_path=path, version=version)
    assert counter.count(header) <= budget
