"""Dates written in text, normalized to ISO 8601 (``YYYY-MM-DD``, or ``YYYY-MM``).

Only unambiguous forms are read: ISO, ``2024/03/15``, day-first ``15.03.2024``,
English month names (``March 15, 2024``, ``15 March 2024``, ``March 2024``), and
slashed ``03/15/2024`` only when one side is above 12. ``04/05/2024`` is skipped, not
guessed: a wrong date is worse than none.
"""

from __future__ import annotations

import re
from datetime import date

__all__ = ["find_dates"]

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})(?![\d-])"), "ymd"),
    (re.compile(r"\b(?P<year>\d{4})/(?P<month>\d{1,2})/(?P<day>\d{1,2})\b"), "ymd"),
    (re.compile(r"\b(?P<day>\d{1,2})\.(?P<month>\d{1,2})\.(?P<year>\d{4})\b"), "ymd"),
    (re.compile(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<year>\d{4})\b"), "slash"),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE), "named"),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE), "named"),
    (re.compile(rf"\b{_MONTH}\s+{_YEAR}\b", re.IGNORECASE), "month"),
]


def _iso(year: int, month: int, day: int | None) -> str | None:
    if not 1900 <= year <= 2100:
        return None
    try:
        d = date(year, month, day or 1)
    except ValueError:
        return None
    return d.isoformat() if day is not None else d.isoformat()[:7]


_YEAR_HINT = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")


def find_dates(text: str) -> list[str]:
    """ISO dates in order of first appearance, without duplicates."""
    if not _YEAR_HINT.search(text):  # every form carries a year: most texts stop here
        return []
    found: dict[int, tuple[int, str]] = {}  # start -> (end, iso): earlier patterns win
    for pattern, kind in _PATTERNS:
        for m in pattern.finditer(text):
            if any(s <= m.start() < e or m.start() <= s < m.end() for s, (e, _) in found.items()):
                continue
            g = m.groupdict()
            year = int(g["year"])
            if kind == "ymd":
                iso = _iso(year, int(g["month"]), int(g["day"]))
            elif kind == "slash":
                a, b = int(g["a"]), int(g["b"])
                if a > 12 >= b:
                    iso = _iso(year, b, a)
                elif b > 12 >= a:
                    iso = _iso(year, a, b)
                else:
                    iso = None  # ambiguous: day-first or month-first
            elif kind == "named":
                iso = _iso(year, _MONTHS[g["mon"].lower()], int(g["day"]))
            else:
                iso = _iso(year, _MONTHS[g["mon"].lower()], None)
            if iso is not None:
                found[m.start()] = (m.end(), iso)
    return list(dict.fromkeys(iso for _, (_, iso) in sorted(found.items())))
