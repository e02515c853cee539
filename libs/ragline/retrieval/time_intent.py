"""Time intent as a grammar: a period named in the question -> the date to search as of.

A question scoped to a past period ("in 2024", "during FY24", "back in March 2024", "for
the 2024 season", "as it stood in Q3 2023", "pre-2025", "last year") asks what was in
force then. The grammar reads a **period** (a year, a two-digit ``'24``, a fiscal year
``FY24``/``FY2024/25``/``fiscal 2024``, a quarter ``Q3 2023``/``2023-Q3``/``third
quarter of 2023``, a half ``H1 2024``, a month ``March 2024``/``Mar. 2024``/``2024-03``,
a season ``summer 2024``, a date ``2024-05-02``/``2 May 2024``/``May 2, 2024``, a range
``2022-2023``/``between 2022 and 2023``, or a relative ``last year``/``last quarter``/
``two years ago`` counted from the request date) and the **relation** the words before it
give ("before"/"pre-" end the day before it starts, "until"/"through"/"by the end of" at
its end, "early"/"mid-"/"start of" at a point inside it, "since"/"after" reach today,
anything else means the period itself). The as-of date is the period's (or relation's)
last day: the version in force at the close of the period is the one that stood "in" it.

What keeps numbers that are not years out: a year must stand alone (``GW-2024``,
``2024-units``, ``$2024``, ``2,024`` are tokens, not years), a bare year needs a
temporal cue before it (a preposition such as in/during/for/before/until, "as of",
"back in") or a time noun after it ("the 2024 season"), and a bare year followed by
another content word is a modifier or a count ("2024 units", "in the 2024 hackathon").
The self-evident forms (months, quarters, dates, fiscal years) need no cue, but written
after a determiner and before a content word they name a thing ("the May 2025
architecture review"), not a scope. A period that reaches today is no scope at all: the
current version answers (except an explicit "as of", which is clamped to today).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta

__all__ = ["TimeScope", "time_scope", "years_named"]

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ORD = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
_ORDW = r"(?:first|second|third|fourth|1st|2nd|3rd|4th)"
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11)}
_Y4 = r"(?:19|20)\d{2}"
_YEAR = rf"(?:{_Y4}|['\u2019]\d{{2}})"  # 2024, '24
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"

# one period; the named groups say which form matched
_PERIOD = (
    rf"(?P<iso>{_Y4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))"
    rf"|(?P<dmy_d>{_DAY})\s+(?:of\s+)?(?P<dmy_m>{_MONTH}),?\s+(?P<dmy_y>{_YEAR})"
    rf"|(?P<mdy_m>{_MONTH})\s+(?P<mdy_d>{_DAY}),?\s+(?P<mdy_y>{_YEAR})"
    rf"|(?:(?P<fq_q>Q[1-4])\s*[\s/-]?\s*(?:of\s+)?(?:FY|fiscal\s+(?:year\s+)?)\s*"
    rf"(?P<fq_y>{_YEAR}|\d{{2}}))"
    rf"|(?P<q_q>Q[1-4])\s*[\s/-]?\s*(?:of\s+)?(?P<q_y>{_YEAR})"
    rf"|(?P<yq_y>{_Y4})\s*[\s/-]?\s*(?P<yq_q>Q[1-4])"
    rf"|(?P<oq_o>{_ORDW})\s+quarter\s+(?:of\s+)?(?:(?:the\s+)?(?:year|FY)\s*)?(?P<oq_y>{_YEAR})"
    rf"|(?P<h_h>H[12])\s*[\s/-]?\s*(?P<h_y>{_YEAR})"
    rf"|(?P<oh_o>first|second|1st|2nd)\s+half\s+(?:of\s+)?(?P<oh_y>{_YEAR})"
    rf"|(?:FY|fiscal\s+year|fiscal|financial\s+year)\s*(?P<fy_y>{_Y4}|['\u2019]?\d{{2}})"
    rf"(?:\s*[/\u2013-]\s*(?P<fy_y2>{_Y4}|\d{{2}}))?"
    rf"|(?P<ym_y>{_Y4})-(?P<ym_m>0[1-9]|1[0-2])(?![\d-])"
    rf"|(?P<my_m>{_MONTH})\s+(?:of\s+)?(?P<my_y>{_YEAR})"
    rf"|(?P<s_s>spring|summer|autumn|fall)\s+(?:of\s+)?(?P<s_y>{_YEAR})"
    rf"|(?P<yr_a>{_Y4})\s*(?:[\u2013\u2014]|-|\bto\b|\bthrough\b|\bthru\b)\s*"
    rf"(?P<yr_b>{_Y4}|\d{{2}})(?![\d-])"
    rf"|(?P<y>{_YEAR})"
    r"|(?P<rel>(?:last|previous|prior|past)\s+(?:calendar\s+|fiscal\s+|financial\s+)?"
    r"(?:year|quarter|month)"
    r"|(?:a|one|two|three|four|five|\d)\s+(?:years?|quarters?|months?)\s+ago)"
)  # fmt: skip
_PERIOD_RE = re.compile(_PERIOD, re.IGNORECASE)
_RANGE_MID_RE = re.compile(r"^\s*(?:to|and|through|thru|until|till|[\u2013\u2014-])\s*(?:the\s+)?")

# what stands right before a period (then optional fillers: "the", "calendar year", ...)
_FILLER = r"(?:(?:the|calendar|year|of|entire|whole|all)\s+)*"
_CUE_RE = re.compile(
    r"(?:^|[^\w-])(?P<cue>as\s+(?:of|at)|as\s+(?:it|they|things)\s+(?:stood|were|was)\s+in"
    r"|back\s+in"
    r"|(?:at|by)\s+the\s+(?:start|beginning|end|close)\s+of|(?:start|beginning|end|close)\s+of"
    r"|in\s+(?:early|late|mid)|early|late|mid|pre|post|prior\s+to|up\s+to|before|after|since"
    r"|until|till|through|thru|throughout|during|in|for|over|within|across|on|from|between)"
    rf"(?:\s+|\s*-\s*){_FILLER}$",
    re.IGNORECASE,
)
_DETERMINER_RE = re.compile(r"\b(?:the|our|its|their|this|that|a|an)\s+$", re.IGNORECASE)
# nouns that make a year a time ("the 2024 season", "the 2024 financial year")
_TIME_HEADS = frozenset(
    [
    "season", "seasons", "year", "years", "period", "quarter", "half", "cycle", "term",
     "window", "fiscal", "financial", "calendar", "tax", "school", "academic", "budget",
     "reporting", "billing", "winter", "summer", "spring", "autumn", "fall",
    ]
)  # fmt: skip
# words that may follow a period without making it a modifier ("in 2024, what", "in 2024 for")
_FUNCTION = frozenset(
    [
     "a", "an", "the", "this", "that", "these", "those", "what", "which", "who", "whom", "whose",
     "when", "where", "why", "how", "was", "were", "is", "are", "be", "been", "being", "did",
     "do", "does", "had", "has", "have", "will", "would", "could", "should", "may", "might",
     "must", "can", "shall", "we", "they", "it", "he", "she", "i", "you", "our", "their", "its",
     "his", "her", "my", "your", "us", "them", "and", "or", "but", "nor", "so", "then", "if",
     "while", "because", "although", "though", "whereas", "for", "in", "on", "at", "to", "of",
     "from", "by", "with", "without", "within", "under", "over", "about", "regarding", "per",
     "according", "compared", "versus", "vs", "against", "before", "after", "since", "until",
     "till", "during", "only", "still", "already", "exactly", "overall", "anyway", "please",
     "also", "just", "ago",
    ]
)  # fmt: skip
_NEXT_WORD_RE = re.compile(r"^\s*(?:['\u2019]s\b)?\s*([A-Za-z][\w-]*)")
_NUMWORD = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


@dataclass(frozen=True, kw_only=True)
class TimeScope:
    """The date to search as of, and the words it was read from."""

    at: date
    start: date
    end: date
    text: str
    # a range ("between 2021 and 2023", "from 2021 to 2023", "2021-2023"): every version in
    # force at some time in start..end answers, not only the one standing at its close
    period: bool = False


def _year(s: str) -> int:
    d = s.strip("'\u2019")
    return int(d) if len(d) == 4 else 2000 + int(d)


def _month_end(y: int, m: int) -> date:
    return date(y, m, calendar.monthrange(y, m)[1])


def _months(y: int, m0: int, n: int) -> tuple[date, date]:
    """``n`` months starting at month ``m0`` of year ``y`` (may run into the next year)."""
    last_m, last_y = (m0 - 1 + n - 1) % 12 + 1, y + (m0 - 1 + n - 1) // 12
    return date(y, m0, 1), _month_end(last_y, last_m)


def _fiscal_year(ends_in: int, start_month: int) -> tuple[date, date]:
    """A fiscal year is named by the calendar year it ends in."""
    if start_month == 1:
        return date(ends_in, 1, 1), date(ends_in, 12, 31)
    return _months(ends_in - 1, start_month, 12)


def _shift_months(d: date, n: int) -> date:
    idx = d.year * 12 + d.month - 1 + n
    y, m = divmod(idx, 12)
    return date(y, m + 1, min(d.day, calendar.monthrange(y, m + 1)[1]))


def _relative(text: str, today: date) -> tuple[date, date]:
    words = text.lower().split()
    if words[-1] == "ago":
        n = int(words[0]) if words[0].isdigit() else _NUMWORD[words[0]]
        unit = words[1].rstrip("s")
        months = {"year": 12, "quarter": 3, "month": 1}[unit] * n
        d = _shift_months(today, -months)
        return d, d
    unit = words[-1]
    if unit == "year":
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    if unit == "quarter":
        q0 = (today.month - 1) // 3 * 3 + 1  # first month of this quarter
        start = _shift_months(date(today.year, q0, 1), -3)
        return _months(start.year, start.month, 3)
    start = _shift_months(date(today.year, today.month, 1), -1)
    return _months(start.year, start.month, 1)


def _period(m: re.Match[str], today: date, fy_start: int) -> tuple[date, date] | None:
    g = m.groupdict()
    try:
        if g["iso"]:
            d = date.fromisoformat(g["iso"])
            return d, d
        if g["dmy_d"] or g["mdy_d"]:
            day = int(re.sub(r"\D", "", g["dmy_d"] or g["mdy_d"]))
            mon = _MONTHS[(g["dmy_m"] or g["mdy_m"]).rstrip(".").lower()]
            d = date(_year(g["dmy_y"] or g["mdy_y"]), mon, day)
            return d, d
        if g["fq_q"]:
            fy0, _ = _fiscal_year(_year(g["fq_y"]), fy_start)
            y, mo = _add(fy0, 3 * (int(g["fq_q"][1]) - 1))
            return _months(y, mo, 3)
        q = g["q_q"] or g["yq_q"]
        if q or g["oq_o"]:
            n = int(q[1]) if q else _ORD[g["oq_o"].lower()]
            return _months(_year(g["q_y"] or g["yq_y"] or g["oq_y"]), 3 * n - 2, 3)
        if g["h_h"] or g["oh_o"]:
            n = int(g["h_h"][1]) if g["h_h"] else _ORD[g["oh_o"].lower()]
            return _months(_year(g["h_y"] or g["oh_y"]), 6 * n - 5, 6)
        if g["fy_y"]:
            first = _year(g["fy_y"])
            ends = first
            if g["fy_y2"]:  # FY2024/25: the year it ends in is the second one
                ends = _year(g["fy_y2"])
                if ends < first:
                    return None
            return _fiscal_year(ends, fy_start)
        if g["ym_y"]:
            return _months(int(g["ym_y"]), int(g["ym_m"]), 1)
        if g["my_m"]:
            return _months(_year(g["my_y"]), _MONTHS[g["my_m"].rstrip(".").lower()], 1)
        if g["s_s"]:
            m0, m1 = _SEASONS[g["s_s"].lower()]
            return _months(_year(g["s_y"]), m0, m1 - m0 + 1)
        if g["yr_a"]:
            a = int(g["yr_a"])
            b = int(g["yr_b"]) if len(g["yr_b"]) == 4 else a // 100 * 100 + int(g["yr_b"])
            return (date(a, 1, 1), date(b, 12, 31)) if a < b <= a + 50 else None
        if g["y"]:
            y = _year(g["y"])
            return date(y, 1, 1), date(y, 12, 31)
        if g["rel"]:
            return _relative(g["rel"], today)
    except (ValueError, KeyError):
        return None
    return None


def _add(d: date, months: int) -> tuple[int, int]:
    s = _shift_months(date(d.year, d.month, 1), months)
    return s.year, s.month


def _standalone(text: str, m: re.Match[str]) -> bool:
    """Not part of a longer token: ``GW-2024``, ``2024-units``, ``$2024``, ``2,024``,
    ``1900.x`` / ``2024.1`` (a version: a dot followed by a word character)."""
    before = text[m.start() - 1] if m.start() else " "
    after = text[m.end() : m.end() + 2]
    if before.isalnum() or before in "_/.#$€£:,+@" or (before == "-" and not _prefix_cue(text, m)):
        return False
    nxt = after[:1]
    return not (nxt.isalnum() or (nxt and nxt in "_/%@+") or re.match(r"\.\w|[,:]\d|-\w", after))


def _prefix_cue(text: str, m: re.Match[str]) -> bool:
    return bool(re.search(r"(?:^|\W)(?:pre|post|mid|early|late)\s*-$", text[: m.start()], re.I))


def _cue(before: str) -> str:
    m = _CUE_RE.search(before)
    return re.sub(r"\s+", " ", m.group("cue").lower()) if m else ""


def _names_a_time(m: re.Match[str], cue: str, before: str, rest: str) -> bool:
    """Whether a period written here scopes the question (the module docstring's rules)."""
    if m.group("rel"):
        return True  # "last year" is a time on its own
    nxt = _NEXT_WORD_RE.match(rest)
    next_word = nxt.group(1).lower() if nxt else ""
    time_head = next_word in _TIME_HEADS
    content_next = bool(next_word) and next_word not in _FUNCTION and not time_head
    if m.group("y") or m.group("yr_a"):
        # "error 2024", "2024 units": a number, not a year; "in 2024 units": a count
        return (bool(cue) or time_head) and not content_next
    if not content_next:
        return True
    # "the May 2025 architecture review" names a thing, as does "2024-01-11 outage"
    numeric = bool(m.group("iso") or m.group("ym_y"))
    return not (_DETERMINER_RE.search(before) or (numeric and not cue))


def time_scope(text: str, today: date, *, fiscal_year_start_month: int = 1) -> TimeScope | None:
    """The as-of date the question's first time-scoping period asks for, or None."""
    for m in _PERIOD_RE.finditer(text):
        span = _period(m, today, fiscal_year_start_month) if _standalone(text, m) else None
        if span is None:
            continue
        start, end = span
        before, rest = text[max(0, m.start() - 60) : m.start()], text[m.end() :]
        cue = _cue(before)
        if not _names_a_time(m, cue, before, rest):
            continue
        ranged = bool(m.group("yr_a"))
        if cue in ("from", "between") and not m.group("yr_a"):
            mid = _RANGE_MID_RE.match(rest)
            if mid:  # "between 2021 and 2023": to the end of the second period
                m2 = _PERIOD_RE.match(rest, mid.end())
                span2 = _period(m2, today, fiscal_year_start_month) if m2 else None
                if span2 is not None and span2[1] >= start:
                    end, ranged = span2[1], True
            elif cue == "from":
                return None  # "from 2024 on": reaches today
        at = _relation(cue, start, end)
        if at is None:
            return None  # since/after: reaches today, the current version answers
        if at >= today:
            if not cue.startswith("as "):
                return None
            at = today  # "as of 2030": clamped, as before
        # a range asked about as a whole (no relation that picks a point in it)
        period = ranged and cue in _WHOLE_RANGE and at == end
        return TimeScope(at=at, start=start, end=end, text=m.group(0), period=period)
    return None


# the cues before a range that ask about the whole of it ("the policy between 2021 and
# 2023", "during 2021-2023"); "until", "by the end of", "as of" pick its last day
_WHOLE_RANGE = frozenset(
    {"", "between", "from", "in", "during", "for", "over", "within", "across", "throughout"}
)


_YEAR_TOKEN_RE = re.compile(
    r"(?<![\w\-/.#$\u20ac\u00a3:,+@])(?:19|20)\d{2}(?![\w%/@+]|\.\w|[,:]\d|-\w)"
)


def years_named(text: str) -> frozenset[int]:
    """Standalone year tokens, cued or not ("the 2023 and 2025 policies", "from the 2023
    edition to the 2025 edition"): a comparison naming two of them compares periods."""
    return frozenset(int(m.group()) for m in _YEAR_TOKEN_RE.finditer(text))


def _relation(cue: str, start: date, end: date) -> date | None:
    if cue in ("since", "after", "post"):
        return None
    if cue in ("before", "pre", "prior to"):
        return start - timedelta(days=1)
    span = (end - start).days
    if cue.endswith(("start of", "beginning of")):
        return start
    if cue.endswith("early"):
        return start + timedelta(days=span // 4)
    if cue.endswith("mid"):
        return start + timedelta(days=span // 2)
    return end  # in/during/for/as of/until/late/end of: the version standing at its close
