"""Version and time intent: what slice of the corpus a search should look at.

A version named in the question restricts the search before ranking, but only once it is
**resolved against the release labels the caller can see** (``versions.KnownVersions``,
read under RLS): ``6.1``, ``v6.1``, ``version 6.1``, ``Widget 6.1``, ``(6.1)`` and
``6.1.`` name the label ``6.1``; a major (``6``, ``v6``, ``version 6``, ``Widget 6``)
or a wildcard (``6.x``) names every label of that major; a range (``6.0–6.2``) every
label between; a list (``5.4, 6.0 and 6.1``) each; a patch (``6.1.3``) the most
specific label it belongs to. A bare number counts as a version only when it resolves
(``3.5 litres`` does not), a bare integer only after a cue (``v``/``version``/``release``
or a product word: a word written before a release label in the caller's own document
titles, e.g. "Widget" from "Widget 6.1 Operator Manual"). A cued mention that resolves
to nothing is reported in ``version_scope.unresolved`` and restricts nothing.

A comparison question whose mentions resolve to two or more sides fans out one filtered
search per side. A version read from the question narrows versioned documents only:
documents without a version that are current still answer, for single-version questions
and for each side of a comparison alike (ADR 0005). A client's ``filters.versions`` is
strict and taken as given. ``as of <date|year>`` (or ``as_of`` in the request) searches
what was in force then; ``include_history`` lifts the date and supersession filters;
A period named in the text ("in 2024", "during FY24", "back in March 2024", "pre-2025",
"last year": the grammar of ``time_intent``) searches what was in force at its close, the
same way; a comparison naming two or more years ("between the 2023 and 2025 policies")
searches every edition (``mode: history``); otherwise the current version is answered,
and the response says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from ragline.retrieval.api_models import VersionScope
from ragline.retrieval.filters import SearchFilters
from ragline.retrieval.time_intent import time_scope, years_named

__all__ = [
    "MAX_COMPARE_SIDES",
    "Intent",
    "Mention",
    "SubSearch",
    "mentions",
    "parse_intent",
    "resolve",
    "version_variants",
]

MAX_COMPARE_SIDES = 8  # more sides than this are searched together, not fanned out

_NUM = r"\d{1,9}(?:\.\d{1,9}){0,3}"
_WILD = r"(?:\.[xX*])"
# one version spec: ``6``, ``v6.1``, ``6.x``, ``6.0-6.2``, ``6.0 through 6.2``; not part of
# a longer token (``ERR-4711``, ``2024-05-02``, ``1,200``, ``3.5%``, ``x86``)
_SPEC_RE = re.compile(
    rf"(?<![\w.\-/])(?<!\d,)(?P<v>[vV](?=\d))?(?P<a>{_NUM})(?P<wild>{_WILD})?"
    rf"(?:\s{{0,3}}(?:[\u2013\u2014-]|\bthrough\b|\bthru\b)\s{{0,3}}[vV]?(?P<b>{_NUM}){_WILD}?)?"
    rf"(?![\w%/]|[.,]\d|-\w|{_WILD})",
    re.IGNORECASE,
)
# the word before a spec (after spaces and an opening bracket)
_PREV_WORD_RE = re.compile(r"([A-Za-z][\w\-]*)\.?\s*[(\[]?\s*$")
# what may stand between two members of a list ("5.4, 6.0 and 6.1", "5 vs 6")
_LIST_GAP_RE = re.compile(
    r"^(?:\s|[,;/&+()\[\]]|\b(?:and|or|nor|vs|versus|to|with|compared)\b\.?)*$",
    re.IGNORECASE,
)
_CUE_WORDS = frozenset({"v", "ver", "version", "versions", "release", "releases", "rel"})

_COMPARE_RE = re.compile(
    r"\b(?:compare|compared|comparison|vs\.?|versus|difference|differences|differ|"
    r"changed?|changes|between)\b",
    re.IGNORECASE,
)
_BETWEEN_RE = re.compile(r"\bbetween\b", re.IGNORECASE)
_CURRENT_RE = re.compile(r"\b(?:current|currently|latest|now|today)\b", re.IGNORECASE)


def version_variants(version: str) -> tuple[str, ...]:
    """``4.2`` and ``v4.2`` name the same version: match how sources spell it."""
    bare = version[1:] if version[:1] in ("v", "V") and version[1:2].isdigit() else version
    return tuple(dict.fromkeys((version, bare, f"v{bare}", f"V{bare}")))


def _numeric(label: str) -> tuple[int, ...] | None:
    """``"v6.1"`` -> ``(6, 1)``; None for labels that are not dotted numbers."""
    s = label[1:] if label[:1] in ("v", "V") else label
    parts = s.split(".")
    if not parts or len(parts) > 4 or not all(p.isdigit() and len(p) <= 9 for p in parts):
        return None
    return tuple(int(p) for p in parts)


@dataclass(frozen=True, kw_only=True)
class Mention:
    """A version named in the question text (before resolution)."""

    text: str  # as written, without the cue word
    lo: tuple[int, ...]
    hi: tuple[int, ...] | None  # a range's upper end (inclusive, as a prefix)
    wildcard: bool  # ``6.x``: every label under ``lo`` (a bare major ``6`` likewise)
    cued: bool  # v/version/release or a product word before it (or its list)
    start: int
    end: int


def mentions(text: str, product_words: Iterable[str] = ()) -> list[Mention]:
    """Every version-looking spec in ``text`` with whether a cue introduces it."""
    products = {w.lower() for w in product_words}
    out: list[Mention] = []
    for m in _SPEC_RE.finditer(text):
        a = tuple(int(p) for p in m.group("a").split("."))
        b = tuple(int(p) for p in m.group("b").split(".")) if m.group("b") else None
        prev = _PREV_WORD_RE.search(text, 0, m.start())
        word = prev.group(1).lower() if prev else ""
        cued = bool(m.group("v")) or word in _CUE_WORDS or word in products
        if not cued and out and _LIST_GAP_RE.match(text[out[-1].end : m.start()]):
            cued = out[-1].cued  # "Widget 5 and 6": the list shares its cue
        wildcard = bool(m.group("wild"))
        if b is not None and b < a:
            a, b = b, a
        out.append(
            Mention(
                text=m.group(0).lstrip("vV"),
                lo=a,
                hi=b,
                wildcard=wildcard,
                cued=cued,
                start=m.start(),
                end=m.end(),
            )
        )
    return out


def resolve(mention: Mention, labels: Iterable[str]) -> tuple[str, ...]:
    """The caller's release labels a mention names, in version order."""
    numeric = [(t, lab) for lab in labels if (t := _numeric(lab)) is not None]
    lo, hi = mention.lo, mention.hi
    if hi is not None:
        hit = [(t, lab) for t, lab in numeric if t >= lo and t[: len(hi)] <= hi]
    else:
        hit = [(t, lab) for t, lab in numeric if t[: len(lo)] == lo]
        if not hit and not mention.wildcard:
            # a patch of a labelled line ("6.1.3" -> "6.1"): the most specific such label
            below = [(t, lab) for t, lab in numeric if lo[: len(t)] == t and len(t) >= 2]
            if below:
                longest = max(len(t) for t, _ in below)
                hit = [(t, lab) for t, lab in below if len(t) == longest]
    return tuple(dict.fromkeys(lab for _, lab in sorted(hit)))


@dataclass(frozen=True, kw_only=True)
class SubSearch:
    query: str
    query_index: int
    versions: tuple[str, ...] | None  # restrict to these version values
    label: str | None  # the version label for comparisons
    # a version read from the query text narrows versioned documents only: a document with
    # no version at all may still answer if it is current on this date (ADR 0005); a
    # client's ``filters.versions`` is strict (None)
    unversioned_at: date | None = None


@dataclass(frozen=True, kw_only=True)
class Intent:
    searches: tuple[SubSearch, ...]
    scope: VersionScope
    include_superseded: bool
    effective_at: date | None
    resolve_series_at: date | None  # keep one version per series, as of this date
    # with effective_at: a period (every version in force on some day of it answers)
    effective_until: date | None = None

    @property
    def replaced_on(self) -> date | None:
        """The date whose replaced versions are excluded before ranking (in_force.py): the
        as-of date, or a period's first day (a version its series had replaced before
        the period began was in force on no day of it)."""
        if self.resolve_series_at is not None:
            return self.resolve_series_at
        return self.effective_at if self.effective_until is not None else None


@dataclass(frozen=True)
class _Side:
    name: str
    labels: tuple[str, ...]


def _sides(
    text: str, known: frozenset[str], products: frozenset[str]
) -> tuple[list[_Side], list[str]]:
    """Resolved sides (one per mention naming labels) and the unresolved cued mentions."""
    sides: list[_Side] = []
    unresolved: list[str] = []
    for m in mentions(text, products):
        if not m.cued and not m.wildcard and len(m.lo) < 2:
            continue  # a bare integer is a count, a year, a code: not a version
        labels = resolve(m, known)
        if labels:
            name = labels[0] if len(labels) == 1 else m.text
            if all(s.labels != labels for s in sides):
                sides.append(_Side(name, labels))
        elif m.cued or m.wildcard or m.hi is not None:
            unresolved.append(m.text)
    return sides, list(dict.fromkeys(unresolved))


def _unresolved_note(unresolved: list[str]) -> str:
    if not unresolved:
        return ""
    named = ", ".join(unresolved[:5])
    return f"; version(s) named but not in your corpus: {named}"


def parse_intent(
    queries: tuple[str, ...],
    filters: SearchFilters | None,
    *,
    as_of: date | None,
    include_history: bool,
    today: date,
    known_versions: frozenset[str] = frozenset(),
    product_words: frozenset[str] = frozenset(),
) -> Intent:
    """Resolve the version/time scope of a request (explicit request fields win over text)."""
    filter_versions = list(filters.versions) if filters and filters.versions else []
    text = " ".join(queries)
    sides, unresolved = _sides(text, known_versions, product_words)
    comparing = bool(_COMPARE_RE.search(text))
    if comparing and len(sides) == 1 and 2 <= len(sides[0].labels) <= MAX_COMPARE_SIDES:
        sides = [_Side(lab, (lab,)) for lab in sides[0].labels]  # "what changed in 6.x"
    query_versions = list(dict.fromkeys(lab for s in sides for lab in s.labels))

    inferred = not filter_versions
    if not inferred:  # the client's filter is strict and taken as given
        sides = [_Side(v, (v,)) for v in dict.fromkeys(filter_versions)]
        unresolved = []
    versions = filter_versions or query_versions
    v_source: str = "query" if inferred else "filters"
    if versions:
        unversioned_at = (as_of or today) if inferred else None
        if comparing and 2 <= len(sides) <= MAX_COMPARE_SIDES and len(queries) == 1:
            subs = tuple(
                SubSearch(
                    query=queries[0],
                    query_index=0,
                    versions=tuple(dict.fromkeys(x for v in s.labels for x in version_variants(v))),
                    label=s.name,
                    unversioned_at=unversioned_at,
                )
                for s in sides
            )
            scope = VersionScope(
                mode="compare",
                versions=versions,
                source=v_source,
                unresolved=unresolved,
                note=f"comparing {len(sides)} versions: one filtered search per version"
                + (", each also open to current unversioned documents" if inferred else "")
                + _unresolved_note(unresolved),
            )
        else:
            allowed = tuple(dict.fromkeys(x for v in versions for x in version_variants(v)))
            subs = tuple(
                SubSearch(
                    query=q,
                    query_index=i,
                    versions=allowed,
                    label=None,
                    unversioned_at=unversioned_at,
                )
                for i, q in enumerate(queries)
            )
            scope = VersionScope(
                mode="explicit",
                versions=versions,
                source=v_source,
                unresolved=unresolved,
                note=(
                    "restricted to the named version(s) and unversioned documents before ranking"
                    if inferred
                    else "restricted to the named version(s) before ranking"
                )
                + _unresolved_note(unresolved),
            )
        # a named version is wanted even if it was superseded or is no longer in force
        return Intent(
            searches=subs,
            scope=scope,
            include_superseded=True,
            effective_at=None,
            resolve_series_at=None,
        )

    plain = tuple(
        SubSearch(query=q, query_index=i, versions=None, label=None) for i, q in enumerate(queries)
    )
    read = None if as_of is not None else time_scope(text, today)
    # "what was the allowance between 2021 and 2023": the "between" of a range asked about
    # as a whole is no comparison ("how did it change between 2021 and 2023" still is)
    if read is not None and read.period and not _COMPARE_RE.search(_BETWEEN_RE.sub(" ", text)):
        comparing = False
    if as_of is None and comparing and len(years_named(text)) >= 2:
        years = ", ".join(str(y) for y in sorted(years_named(text)))
        return Intent(  # a comparison of periods wants every edition, not one as-of slice
            searches=plain,
            scope=VersionScope(
                mode="history",
                source="query",
                unresolved=unresolved,
                note=f"comparing periods ({years}): all versions, including superseded"
                + _unresolved_note(unresolved),
            ),
            include_superseded=True,
            effective_at=None,
            resolve_series_at=None,
        )
    if include_history:
        return Intent(
            searches=plain,
            scope=VersionScope(
                mode="history",
                source="request",
                unresolved=unresolved,
                note="all versions, including superseded" + _unresolved_note(unresolved),
            ),
            include_superseded=True,
            effective_at=None,
            resolve_series_at=None,
        )
    if read is not None and read.period:
        return Intent(
            searches=plain,
            scope=VersionScope(
                mode="as_of",
                as_of=read.end,
                in_force_from=read.start,
                source="query",
                unresolved=unresolved,
                note=f"what was in force at any time from {read.start.isoformat()} to "
                f"{read.end.isoformat()} (read from {read.text!r})" + _unresolved_note(unresolved),
            ),
            include_superseded=True,
            effective_at=read.start,
            effective_until=read.end,
            resolve_series_at=None,
        )
    at = as_of or (read.at if read is not None else None)
    if at is not None:
        said = f" (read from {read.text!r})" if read is not None else ""
        return Intent(
            searches=plain,
            scope=VersionScope(
                mode="as_of",
                as_of=at,
                source="request" if as_of is not None else "query",
                unresolved=unresolved,
                note=f"what was in force on {at.isoformat()}{said}" + _unresolved_note(unresolved),
            ),
            include_superseded=True,
            effective_at=at,
            resolve_series_at=at,
        )
    if unresolved:
        note = (
            "no release in your corpus matches the version(s) named: "
            + ", ".join(unresolved[:5])
            + "; answering for the current version(s)"
        )
    else:
        note = "answering for the current version" + (
            " (as asked)" if _CURRENT_RE.search(text) else "; name a version or as_of for others"
        )
    return Intent(
        searches=plain,
        scope=VersionScope(mode="current", as_of=today, unresolved=unresolved, note=note),
        include_superseded=False,
        effective_at=today,
        resolve_series_at=None,
    )
