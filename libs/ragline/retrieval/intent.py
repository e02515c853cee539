"""Version and time intent: what slice of the corpus a search should look at.

An explicit version (in the filters, or named in the query as ``v4.2`` / ``version 4.2``,
or as a bare ``4.2`` when the caller's corpus has a version labelled so) restricts the
search before ranking. A comparison question naming two or more versions
fans out one filtered search per version. ``as of <date|year>`` (or ``as_of`` in the
request) searches what was in force then; ``include_history`` lifts the date and
supersession filters; otherwise the current version is answered, and the response
says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ragline.retrieval.api_models import VersionScope
from ragline.retrieval.filters import SearchFilters

__all__ = ["Intent", "SubSearch", "parse_intent", "version_variants"]

_VERSION_RE = re.compile(
    r"(?<![\w.])(?:v|ver\.?|version|release|rel\.?)\s?(\d+(?:\.\d+){0,3})(?![\w])",
    re.IGNORECASE,
)
# a bare dotted number ("Gateway 3.9"): a version only if the corpus has that version
_BARE_VERSION_RE = re.compile(r"(?<![\w.,/-])(\d+\.\d+(?:\.\d+){0,2})(?![\w.%/-]|,\d)")
_COMPARE_RE = re.compile(
    r"\b(?:compare|compared|comparison|vs\.?|versus|difference|differences|differ|"
    r"changed?|changes|between)\b",
    re.IGNORECASE,
)
_AS_OF_RE = re.compile(
    r"\bas\s+(?:of|at)\s+(?P<iso>\d{4}-\d{2}-\d{2})|\bas\s+(?:of|at)\s+(?P<year>(?:19|20)\d{2})\b",
    re.IGNORECASE,
)
_CURRENT_RE = re.compile(r"\b(?:current|currently|latest|now|today)\b", re.IGNORECASE)


def version_variants(version: str) -> tuple[str, ...]:
    """``4.2`` and ``v4.2`` name the same version: match how sources spell it."""
    bare = version[1:] if version[:1] in ("v", "V") and version[1:2].isdigit() else version
    return tuple(dict.fromkeys((version, bare, f"v{bare}", f"V{bare}")))


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


def _versions_in(text: str, known: frozenset[str] = frozenset()) -> list[str]:
    found = [m.group(1) for m in _VERSION_RE.finditer(text)]
    if known:
        found += [
            m.group(1)
            for m in _BARE_VERSION_RE.finditer(text)
            if any(v in known for v in version_variants(m.group(1)))
        ]
    return list(dict.fromkeys(found))


def _as_of_in(text: str, today: date) -> date | None:
    m = _AS_OF_RE.search(text)
    if m is None:
        return None
    if m.group("iso"):
        try:
            return date.fromisoformat(m.group("iso"))
        except ValueError:
            return None
    return min(date(int(m.group("year")), 12, 31), today)


def parse_intent(
    queries: tuple[str, ...],
    filters: SearchFilters | None,
    *,
    as_of: date | None,
    include_history: bool,
    today: date,
    known_versions: frozenset[str] = frozenset(),
) -> Intent:
    """Resolve the version/time scope of a request (explicit request fields win over text)."""
    filter_versions = list(filters.versions) if filters and filters.versions else []
    text = " ".join(queries)
    query_versions = _versions_in(text, known_versions)
    comparing = bool(_COMPARE_RE.search(text))

    versions = filter_versions or query_versions
    v_source: str = "filters" if filter_versions else "query"
    if versions:
        if comparing and len(versions) >= 2 and len(queries) == 1:
            subs = tuple(
                SubSearch(query=queries[0], query_index=0, versions=version_variants(v), label=v)
                for v in versions
            )
            scope = VersionScope(
                mode="compare",
                versions=versions,
                source=v_source,
                note=f"comparing {len(versions)} versions: one filtered search per version",
            )
        else:
            allowed = tuple(dict.fromkeys(x for v in versions for x in version_variants(v)))
            inferred = v_source == "query"
            subs = tuple(
                SubSearch(
                    query=q,
                    query_index=i,
                    versions=allowed,
                    label=None,
                    unversioned_at=(as_of or today) if inferred else None,
                )
                for i, q in enumerate(queries)
            )
            scope = VersionScope(
                mode="explicit",
                versions=versions,
                source=v_source,
                note=(
                    "restricted to the named version(s) and unversioned documents before ranking"
                    if inferred
                    else "restricted to the named version(s) before ranking"
                ),
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
    if include_history:
        return Intent(
            searches=plain,
            scope=VersionScope(
                mode="history", source="request", note="all versions, including superseded"
            ),
            include_superseded=True,
            effective_at=None,
            resolve_series_at=None,
        )
    text_as_of = None if as_of is not None else _as_of_in(text, today)
    at = as_of or text_as_of
    if at is not None:
        return Intent(
            searches=plain,
            scope=VersionScope(
                mode="as_of",
                as_of=at,
                source="request" if as_of is not None else "query",
                note=f"what was in force on {at.isoformat()}",
            ),
            include_superseded=True,
            effective_at=at,
            resolve_series_at=at,
        )
    note = "answering for the current version" + (
        " (as asked)" if _CURRENT_RE.search(text) else "; name a version or as_of for others"
    )
    return Intent(
        searches=plain,
        scope=VersionScope(mode="current", as_of=today, note=note),
        include_superseded=False,
        effective_at=today,
        resolve_series_at=None,
    )
