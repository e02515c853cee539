"""Time intent as a grammar, as properties over a generated grid: phrasings of a period
(year, fiscal year, quarter, month, date, "before", "last year") x a series of 2-4
versions x effective dates. The period must resolve to the date an independent oracle
computes, and the as-of scope (the in-force predicate, then one version per series) must
return the version in force then and no other version of the series. Numbers that are not
years never scope time. A range ("between 2021 and 2023") is a period: every version in
force on some day of it, and no other."""

from __future__ import annotations

import calendar
from datetime import date, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragline.retrieval.candidates import Candidate, resolve_series
from ragline.retrieval.filters import (
    BoolEquals,
    Effective,
    ExcludedTerms,
    Predicate,
    compile_predicates,
    to_opensearch,
    to_sql,
)
from ragline.retrieval.hydrate import ChunkRow
from ragline.retrieval.intent import parse_intent
from ragline.retrieval.time_intent import time_scope

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MONTHS = list(calendar.month_name)[1:]
ORD = ["first", "second", "third", "fourth"]
TOPIC = st.sampled_from(["standby allowance", "deductible", "travel per diem", "alarm limit"])


def _month_end(y: int, m: int) -> date:
    return date(y, m, calendar.monthrange(y, m)[1])


@st.composite
def periods(draw: st.DrawFn) -> tuple[str, date, date]:
    """(a phrase naming a period, the as-of date it means, the request date)."""
    today = draw(st.dates(date(2025, 1, 1), date(2027, 12, 31)))
    y = draw(st.integers(2016, today.year - 1))
    kind = draw(st.sampled_from(["year", "before", "quarter", "month", "date", "last_year"]))
    if kind == "year":
        form = draw(
            st.sampled_from(
                [
                    "In {Y}, what was the {t}?",
                    "What was the {t} in {Y}?",
                    "what was the {t} during {Y}",
                    "{t} during FY{YY}",
                    "the {t} for the {Y} season",
                    "As it stood in {Y}, what was the {t}?",
                    "back in {Y} what was the {t}",
                    "{t} as of {Y}",
                    "What was the {t} in '{YY}?",
                    "the {t} throughout {Y}",
                    "what did the {t} look like in fiscal year {Y}",
                    "the {t} in the {Y} financial year",
                ]
            )
        )
        return form.replace("{Y}", str(y)).replace("{YY}", f"{y % 100:02d}"), date(y, 12, 31), today
    if kind == "before":
        form = draw(st.sampled_from(["the {t} pre-{N}", "what was the {t} before {N}?",
                                     "{t} prior to {N}"]))  # fmt: skip
        return form.replace("{N}", str(y + 1)), date(y, 12, 31), today
    if kind == "quarter":
        q = draw(st.integers(1, 4))
        form = draw(
            st.sampled_from(
                ["the {t} in Q{q} {Y}", "{t} during {Y}-Q{q}", "the {t} in the {o} quarter of {Y}"]
            )
        )
        text = form.replace("{q}", str(q)).replace("{Y}", str(y)).replace("{o}", ORD[q - 1])
        return text, _month_end(y, 3 * q), today
    if kind == "month":
        m = draw(st.integers(1, 12))
        name = MONTHS[m - 1]
        form = draw(
            st.sampled_from(
                ["back in {M} {Y}, what was the {t}?", "the {t} in {m3}. {Y}",
                 "the {t} during {M} of {Y}", "the {t} in {Y}-{MM}"]
            )
        )  # fmt: skip
        text = (
            form.replace("{M}", name).replace("{m3}", name[:3]).replace("{Y}", str(y))
            .replace("{MM}", f"{m:02d}")
        )  # fmt: skip
        return text, _month_end(y, m), today
    if kind == "date":
        d = draw(st.dates(date(y, 1, 1), date(y, 12, 31)))
        form = draw(
            st.sampled_from(
                [
                    "the {t} on {iso}",
                    "the {t} as of {D} {M} {Y}",
                    "what was the {t} on {M} {D}, {Y}?",
                ]
            )
        )
        text = (
            form.replace("{iso}", d.isoformat()).replace("{D}", str(d.day))
            .replace("{M}", MONTHS[d.month - 1]).replace("{Y}", str(d.year))
        )  # fmt: skip
        return text, d, today
    form = draw(st.sampled_from(["the {t} last year", "What was last year's {t}?"]))
    return form, date(today.year - 1, 12, 31), today


@st.composite
def series(draw: st.DrawFn) -> list[tuple[str, date, date | None, bool]]:
    """2-4 versions ``(id, effective, expiry, superseded)``; expiry set or not, like sources do."""
    n = draw(st.integers(2, 4))
    days = sorted(draw(st.sets(st.integers(0, 11 * 365), min_size=n, max_size=n)))
    effective = [date(2015, 6, 1) + timedelta(days=d) for d in days]
    expire = draw(st.booleans())
    out = []
    for i, eff in enumerate(effective):
        last = i == n - 1
        expiry = None if last or not expire else effective[i + 1]
        out.append((f"v{i + 1}", eff, expiry, not last))
    return out


def _row(doc: str, eff: date) -> ChunkRow:
    return ChunkRow(
        chunk_id=f"c-{doc}", document_id=doc, parent_id=None, text="t", section_path=(),
        content_type="text", page_start=None, page_end=None, line_start=None, line_end=None,
        injection_suspect=False, pii_types=(), title=None, uri=None, version=doc,
        series_id="s", effective_date=eff, similarity=None, trust="high", embedding=None,
    )  # fmt: skip


def _passes(preds: list[Predicate], eff: date, exp: date | None, superseded: bool) -> bool:
    """The default-scope predicates, as the database evaluates them (filters.to_sql)."""
    for p in preds:
        if isinstance(p, BoolEquals) and p.column == "superseded" and superseded != p.value:
            return False
        if isinstance(p, Effective) and (eff > p.last or (exp is not None and exp <= p.at)):
            return False
    return True


def _in_force(versions: list[tuple[str, date, date | None, bool]], at: date) -> str | None:
    """The oracle: the latest version already effective on ``at`` (and not expired)."""
    live = [v for v in versions if v[1] <= at and (v[2] is None or v[2] > at)]
    return max(live, key=lambda v: v[1])[0] if live else None


@SETTINGS
@given(period=periods(), topic=TOPIC, versions=series())
def test_a_period_selects_the_version_in_force_then_and_no_other(period, topic, versions):
    text, at, today = period
    q = text.replace("{t}", topic)
    intent = parse_intent((q,), None, as_of=None, include_history=False, today=today)
    assert intent.scope.mode == "as_of", q
    assert intent.effective_at == at and intent.resolve_series_at == at, q
    assert intent.include_superseded  # a version superseded later is still wanted
    preds = compile_predicates(
        None, include_superseded=intent.include_superseded, effective_at=intent.effective_at
    )
    cands = [
        Candidate(row=_row(v, eff), rrf=0.0)
        for v, eff, exp, sup in versions
        if _passes(preds, eff, exp, sup)
    ]
    kept = [c.row.document_id for c in resolve_series(cands, at)]
    expected = _in_force(versions, at)
    assert kept == ([expected] if expected else []), (q, versions, at)


@SETTINGS
@given(period=periods(), topic=TOPIC)
def test_the_same_period_without_time_words_answers_the_current_version(period, topic):
    _, _, today = period
    i = parse_intent(
        (f"what is the {topic}",), None, as_of=None, include_history=False, today=today
    )
    assert i.scope.mode == "current" and not i.include_superseded


NOT_YEARS = [
    "error {Y}", "GW-{Y}", "{Y} units", "ERR-{Y}-17", "in {Y} units", "the {Y} hackathon",
    "ticket #{Y}", "{Y} ms", "costs ${Y}", "{Y}%", "port {Y}", "SA-{Y}-007", "v{Y}.1",
    "{Y},000 requests", "model TN-{Y}", "{Y}-units", "for {Y} customers", "x{Y}",
    # a temporal cue before a token that is not a year: the token rule alone decides
    "in {Y}-units", "for ${Y}", "in {Y}.5 seconds", "during {Y}ms", "on #{Y}", "in {Y}%",
    # a version written like a year ("1900.x", "2024.1"): a dot then a word character
    "the default timeout in {Y}.x", "what changed in {Y}.1?", "in release {Y}.x",
]  # fmt: skip


@SETTINGS
@given(
    form=st.sampled_from(NOT_YEARS),
    y=st.integers(1990, 2029),
    pre=st.sampled_from(["", "why does ", "what is ", "how many "]),
    post=st.sampled_from(["", "?", " happen", " mean?", " in the manual"]),
)
def test_numbers_that_are_not_years_never_scope_time(form, y, pre, post):
    q = pre + form.replace("{Y}", str(y)) + post
    assert time_scope(q, date(2026, 3, 1)) is None, q


def test_named_things_and_open_ended_periods_are_not_scopes() -> None:
    today = date(2026, 3, 1)
    for q in [
        "What default rate limit will the EU region get in the May 2025 architecture review?",
        "Which release will the fleet run after the September 2025 product council?",
        "What changed since 2024?",
        "What is the policy in 2026?",  # reaches today: the current version answers
        "When does this year's winter office closure start?",
        "the 2024-05-02 outage report",
    ]:
        assert time_scope(q, today) is None, q


def test_relations_inside_a_period() -> None:
    today = date(2026, 3, 1)
    cases = {
        "in early 2024": date(2024, 4, 1),
        "mid-2024": date(2024, 7, 1),
        "at the start of 2024": date(2024, 1, 1),
        "by the end of Q2 2024": date(2024, 6, 30),
        "before March 2024": date(2024, 2, 29),
        "between 2021 and 2023": date(2023, 12, 31),
        "from 2021 to 2022": date(2022, 12, 31),
        "last quarter": date(2025, 12, 31),
        "two years ago": date(2024, 3, 1),
        "H1 2023": date(2023, 6, 30),
        "summer 2024": date(2024, 8, 31),
        "as of 2030": today,  # an explicit "as of" is clamped, as before
    }
    for q, at in cases.items():
        got = time_scope(q, today)
        assert got is not None and got.at == at, (q, got)


def test_fiscal_years_follow_the_configured_start_month() -> None:
    got = time_scope("during FY24", date(2026, 3, 1), fiscal_year_start_month=4)
    assert got is not None and (got.start, got.end) == (date(2023, 4, 1), date(2024, 3, 31))
    got = time_scope("in Q1 FY2024", date(2026, 3, 1), fiscal_year_start_month=4)
    assert got is not None and got.at == date(2023, 6, 30)


def test_request_as_of_wins_over_the_text() -> None:
    i = parse_intent(
        ("policy in 2021",), None, as_of=date(2023, 1, 1), include_history=False,
        today=date(2026, 3, 1),
    )  # fmt: skip
    assert i.effective_at == date(2023, 1, 1) and i.scope.source == "request"
    assert i.scope.as_of == date(2023, 1, 1)


def test_shadowed_versions_are_excluded_in_both_backends() -> None:
    preds = compile_predicates(
        None, include_superseded=True, effective_at=date(2024, 12, 31), exclude_documents=("a",)
    )
    where, params = to_sql(preds, "c")
    assert "NOT (" in where.as_string(None) and ["a"] in params
    assert {"bool": {"must_not": [{"terms": {"document_id": ["a"]}}]}} in to_opensearch(preds)
    none = compile_predicates(None, include_superseded=True, effective_at=date(2024, 12, 31))
    assert not any(isinstance(p, ExcludedTerms) for p in none)


@SETTINGS
@given(
    a=st.integers(2000, 2024),
    gap=st.integers(1, 5),
    form=st.sampled_from(
        [
            "How did the {t} change between the {A} and {B} policies?",
            "Compare the {t} in the {A} and {B} editions.",
            "What changed in the {t} from the {A} edition to the {B} edition?",
            "{t}: {A} vs {B}",
            "differences in the {t} between {A} and {B}",
        ]
    ),
    topic=TOPIC,
)
def test_a_comparison_of_two_years_searches_every_edition(a, gap, form, topic):
    q = form.replace("{t}", topic).replace("{A}", str(a)).replace("{B}", str(a + gap))
    i = parse_intent((q,), None, as_of=None, include_history=False, today=date(2026, 3, 1))
    assert i.scope.mode == "history", q
    assert i.include_superseded and i.effective_at is None and i.resolve_series_at is None


def test_one_year_in_a_comparison_is_still_a_period() -> None:
    i = parse_intent(
        ("what changed in the allowance in 2024?",), None, as_of=None, include_history=False,
        today=date(2026, 3, 1),
    )  # fmt: skip
    assert i.scope.mode == "as_of" and i.effective_at == date(2024, 12, 31)


RANGE_FORMS = [
    "What was the {t} between {A} and {B}?",
    "the {t} from {A} to {B}",
    "{t} during {A}-{B}",
    "what was the {t} over {A}\u2013{B}?",
    "the {t} in {A} through {B}",
]


def _replaced_on(versions: list[tuple[str, date, date | None, bool]], at: date) -> set[str]:
    """in_force.SHADOWED_SQL over the series: in force on ``at`` by date, and a later
    version already effective (and not expired) on ``at``."""

    def live(v: tuple[str, date, date | None, bool]) -> bool:
        return v[1] <= at and (v[2] is None or v[2] > at)

    return {d[0] for d in versions if live(d) and any(live(n) and n[1] > d[1] for n in versions)}


def _in_force_during(
    versions: list[tuple[str, date, date | None, bool]], start: date, end: date
) -> set[str]:
    """The oracle: versions the in-force rule (``_in_force``) picks on some day of the
    range, found day by day."""
    out, day = set(), start
    while day <= end:
        v = _in_force(versions, day)
        if v is not None:
            out.add(v)
        day += timedelta(days=1)
    return out


@SETTINGS
@given(
    a=st.integers(2015, 2025),
    span=st.integers(1, 4),
    form=st.sampled_from(RANGE_FORMS),
    topic=TOPIC,
    versions=series(),
)
def test_a_range_selects_every_version_in_force_in_it_and_no_other(a, span, form, topic, versions):
    b = a + span
    q = form.replace("{t}", topic).replace("{A}", str(a)).replace("{B}", str(b))
    today = date(2030, 1, 1)
    intent = parse_intent((q,), None, as_of=None, include_history=False, today=today)
    start, end = date(a, 1, 1), date(b, 12, 31)
    assert intent.scope.mode == "as_of" and intent.scope.in_force_from == start, q
    assert (intent.effective_at, intent.effective_until) == (start, end), q
    assert intent.resolve_series_at is None and intent.replaced_on == start, q
    preds = compile_predicates(
        None,
        include_superseded=intent.include_superseded,
        effective_at=intent.effective_at,
        effective_until=intent.effective_until,
        exclude_documents=tuple(sorted(_replaced_on(versions, start))),
    )
    kept = {
        v
        for v, eff, exp, sup in versions
        if _passes(preds, eff, exp, sup)
        and not any(isinstance(p, ExcludedTerms) and v in p.values for p in preds)
    }
    assert kept == _in_force_during(versions, start, end), (q, versions)


def test_a_point_inside_a_range_is_still_a_point() -> None:
    for q in ("the deductible until 2021-2023", "the deductible by the end of 2021-2023"):
        i = parse_intent((q,), None, as_of=None, include_history=False, today=date(2030, 1, 1))
        assert i.effective_until is None and i.resolve_series_at == date(2023, 12, 31), q
