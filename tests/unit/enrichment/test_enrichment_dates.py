"""Dates in text, normalized to ISO; ambiguous or impossible ones skipped."""

from __future__ import annotations

import pytest

from ragline.enrichment.dates import find_dates


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("released 2024-03-15", ["2024-03-15"]),
        ("at 2024-03-15T10:00:00Z", ["2024-03-15"]),
        ("on 2024/3/5", ["2024-03-05"]),
        ("bis 31.12.2025", ["2025-12-31"]),
        ("March 3, 2024 and Mar. 4 2024", ["2024-03-03", "2024-03-04"]),
        ("the 1st of April 2024", ["2024-04-01"]),
        ("15 September 2023", ["2023-09-15"]),
        ("in May 2026", ["2026-05"]),
        ("13/05/2024 and 05/14/2024", ["2024-05-13", "2024-05-14"]),
    ],
)
def test_recognized_forms(text: str, expected: list[str]) -> None:
    assert find_dates(text) == expected


@pytest.mark.parametrize(
    "text",
    ["04/05/2024", "2024-02-30", "May be later", "version 2024.1", "1850-01-01", "12:30"],
)
def test_ambiguous_or_invalid_dates_are_skipped(text: str) -> None:
    assert find_dates(text) == []


def test_order_of_appearance_without_duplicates() -> None:
    assert find_dates("2025-01-02, then 2024-01-01, again 2025-01-02") == [
        "2025-01-02",
        "2024-01-01",
    ]
