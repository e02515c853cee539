"""The search filter model and its ONE compilation into both backends.

``SearchFilters`` (defined once, in ``ragline_client.models``) is what a client may
send (an unknown field is an error, never ignored). ``compile_predicates`` turns it plus
the default scope (tenant and ACL are added by the callers; not deleted, not superseded
unless asked, effective at a date) into backend-neutral predicates, which ``to_sql``
and ``to_opensearch`` render. Dense, lexical and the Postgres re-read therefore filter
by exactly the same rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from psycopg import sql

from ragline_client.models import SearchFilters

__all__ = [
    "BoolEquals",
    "Effective",
    "ExcludedTerms",
    "Predicate",
    "Range",
    "SearchFilters",
    "Terms",
    "compile_predicates",
    "to_opensearch",
    "to_sql",
]

# filter field -> column (Postgres chunks column == OpenSearch field)
_TERM_FIELDS: tuple[tuple[str, str], ...] = (
    ("source_type", "source_type"),
    ("content_type", "content_type"),
    ("document_ids", "document_id"),
    ("versions", "version"),
    ("series_ids", "series_id"),
    ("classification", "classification"),
    ("language", "language"),
    ("trust", "trust"),
)


@dataclass(frozen=True)
class Terms:
    column: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Range:
    column: str
    gte: date | None = None
    lte: date | None = None


@dataclass(frozen=True)
class ExcludedTerms:
    """None of ``values`` (as-of searches: versions a later one of their series replaced)."""

    column: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class BoolEquals:
    column: str
    value: bool


@dataclass(frozen=True)
class Effective:
    """In force on ``at``: not yet expired and already effective (open ends count); with
    ``until``, in force on some day from ``at`` to ``until`` (a period: effective by its
    last day, not expired by its first)."""

    at: date
    until: date | None = None

    @property
    def last(self) -> date:
        return self.until if self.until is not None else self.at


@dataclass(frozen=True)
class VersionsOrCurrentUnversioned:
    """One of ``versions``, or no version at all and current on ``at`` (not superseded,
    in force): the scope of a version read from the question text (ADR 0005)."""

    versions: tuple[str, ...]
    at: date


Predicate = Terms | ExcludedTerms | Range | BoolEquals | Effective | VersionsOrCurrentUnversioned


def compile_predicates(
    filters: SearchFilters | None,
    *,
    include_superseded: bool,
    effective_at: date | None,
    unversioned_at: date | None = None,
    exclude_documents: tuple[str, ...] = (),
    effective_until: date | None = None,
) -> list[Predicate]:
    """The filters plus the default scope. ``effective_at=None`` skips the date check
    (history searches); with ``unversioned_at`` a version restriction also lets through
    documents that have no version and are current on that date (ADR 0005);
    ``exclude_documents`` are versions a later one of their series replaced (in_force.py);
    ``effective_until`` makes the date check a period (in force on some day of
    ``effective_at`` .. ``effective_until``)."""
    preds: list[Predicate] = []
    f = filters or SearchFilters()
    for field, column in _TERM_FIELDS:
        values = getattr(f, field)
        if values is not None:
            strs = tuple(str(v) for v in values)
            if field == "versions" and unversioned_at is not None:
                preds.append(VersionsOrCurrentUnversioned(strs, unversioned_at))
            else:
                preds.append(Terms(column, strs))
    if f.effective_from is not None or f.effective_to is not None:
        preds.append(Range("effective_date", gte=f.effective_from, lte=f.effective_to))
    if not include_superseded:
        preds.append(BoolEquals("superseded", False))
    if effective_at is not None:
        preds.append(Effective(effective_at, effective_until))
    if exclude_documents:
        preds.append(ExcludedTerms("document_id", exclude_documents))
    return preds


def to_sql(preds: Sequence[Predicate], alias: str) -> tuple[sql.Composable, list[Any]]:
    """``(WHERE fragment, params)``; the fragment is ``TRUE`` when there is nothing to add."""
    parts: list[sql.Composable] = []
    params: list[Any] = []

    def col(name: str) -> sql.Identifier:
        return sql.Identifier(alias, name)

    for p in preds:
        if isinstance(p, Terms):
            parts.append(sql.SQL("{} = ANY(%s::text[])").format(col(p.column)))
            params.append(list(p.values))
        elif isinstance(p, ExcludedTerms):
            parts.append(sql.SQL("NOT ({} = ANY(%s::text[]))").format(col(p.column)))
            params.append(list(p.values))
        elif isinstance(p, VersionsOrCurrentUnversioned):
            parts.append(
                sql.SQL(
                    "{v} = ANY(%s::text[]) OR ({v} IS NULL AND {s} = false AND {current})"
                ).format(v=col("version"), s=col("superseded"), current=_in_force_sql(col))
            )
            params.extend([list(p.versions), p.at, p.at])
        elif isinstance(p, Range):
            if p.gte is not None:
                parts.append(sql.SQL("{} >= %s").format(col(p.column)))
                params.append(p.gte)
            if p.lte is not None:
                parts.append(sql.SQL("{} <= %s").format(col(p.column)))
                params.append(p.lte)
        elif isinstance(p, BoolEquals):
            parts.append(sql.SQL("{} = %s").format(col(p.column)))
            params.append(p.value)
        else:
            parts.append(_in_force_sql(col))
            params.extend([p.last, p.at])
    if not parts:
        return sql.SQL("TRUE"), params
    return sql.SQL(" AND ").join(sql.SQL("({})").format(x) for x in parts), params


def _in_force_sql(col: Callable[[str], sql.Identifier]) -> sql.Composable:
    """In force on a date (two ``%s``: effective by the first, not expired by the second;
    the same date for a day, a period's last and first day for a period)."""
    return sql.SQL("({e} IS NULL OR {e} <= %s) AND ({x} IS NULL OR {x} > %s)").format(
        e=col("effective_date"), x=col("expiry_date")
    )


def _missing(field: str) -> dict[str, Any]:
    return {"bool": {"must_not": [{"exists": {"field": field}}]}}


def _in_force_os(at: date, last: date | None = None) -> list[dict[str, Any]]:
    day, upto = at.isoformat(), (last or at).isoformat()
    return [
        {
            "bool": {
                "should": [
                    _missing("effective_date"),
                    {"range": {"effective_date": {"lte": upto}}},
                ],
                "minimum_should_match": 1,
            }
        },
        {
            "bool": {
                "should": [_missing("expiry_date"), {"range": {"expiry_date": {"gt": day}}}],
                "minimum_should_match": 1,
            }
        },
    ]


def to_opensearch(preds: Sequence[Predicate]) -> list[dict[str, Any]]:
    """OpenSearch ``bool.filter`` clauses for the same predicates."""
    out: list[dict[str, Any]] = []
    for p in preds:
        if isinstance(p, Terms):
            out.append({"terms": {p.column: list(p.values)}})
        elif isinstance(p, ExcludedTerms):
            out.append({"bool": {"must_not": [{"terms": {p.column: list(p.values)}}]}})
        elif isinstance(p, VersionsOrCurrentUnversioned):
            unversioned = [_missing("version"), {"term": {"superseded": False}}]
            out.append(
                {
                    "bool": {
                        "should": [
                            {"terms": {"version": list(p.versions)}},
                            {"bool": {"filter": unversioned + _in_force_os(p.at)}},
                        ],
                        "minimum_should_match": 1,
                    }
                }
            )
        elif isinstance(p, Range):
            rng: dict[str, str] = {}
            if p.gte is not None:
                rng["gte"] = p.gte.isoformat()
            if p.lte is not None:
                rng["lte"] = p.lte.isoformat()
            out.append({"range": {p.column: rng}})
        elif isinstance(p, BoolEquals):
            out.append({"term": {p.column: p.value}})
        else:
            out.extend(_in_force_os(p.at, p.last))
    return out
