"""PII detection: presidio recognizers with the context boost and ragline's validations."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.scanning import pii
from ragline.scanning.engine import Detectors
from ragline.scanning.layout import Layout
from ragline.scanning.model import DetectPlan, Finding
from ragline.scanning.pii import phone_pieces, phone_windows
from ragline.scanning.policy import PolicyContext, PolicySet
from ragline.scanning.secret_patterns import ScanDeadline

DEFAULT_PLAN = (
    PolicySet.default()
    .resolve(
        PolicyContext(
            tenant_id="t", source="s", source_type="wiki", classification="internal", trust="medium"
        )
    )
    .plan()
)


def found(
    detectors: Detectors, text: str, plan: DetectPlan = DEFAULT_PLAN
) -> list[tuple[str, str]]:
    fs: list[Finding] = detectors.pii.detect(Layout([text]), plan)
    return sorted((f.type, text[f.start : f.end]) for f in fs)


@pytest.mark.parametrize(
    ("text", "entity", "value"),
    [
        (
            "mail maria.gonzalez@acme-corp.com today",
            "EMAIL_ADDRESS",
            "maria.gonzalez@acme-corp.com",
        ),
        ("call +1 415-555-0132 now", "PHONE_NUMBER", "+1 415-555-0132"),
        ("UK desk +44 20 7946 0958.", "PHONE_NUMBER", "+44 20 7946 0958"),
        ("office (212) 555-0187 ok", "PHONE_NUMBER", "(212) 555-0187"),
        ("card 4111 1111 1111 1111 ok", "CREDIT_CARD", "4111 1111 1111 1111"),
        ("IBAN GB82 WEST 1234 5698 7654 32.", "IBAN_CODE", "GB82 WEST 1234 5698 7654 32"),
        ("SSN 536-22-8104 on file", "US_SSN", "536-22-8104"),
        ("social security number 536228104", "US_SSN", "536228104"),
        ("NHS number 943 476 5919", "UK_NHS", "943 476 5919"),
    ],
)
def test_detected(detectors: Detectors, text: str, entity: str, value: str) -> None:
    assert (entity, value) in found(detectors, text)


@pytest.mark.parametrize(
    "text",
    [
        "95% CI 0.89-1.26 and 1.6-88.1, HR 0.78",  # decimals are not phone numbers
        "## [3.14.0] - 2025-10-02",  # dates after versions
        "PD 0332991 is a selective inhibitor",  # bare 7 digits without context
        "doses of 3000-5000 IU",
        "postgres://admin:Sup3rS3cret@db.example.com:5432/app",  # URL userinfo is no email
        "the id 536228104 of the batch",  # 9 digits without SSN context
        "version 2.10.1.3 released",
        "SSN 078-05-1120 is the famous invalid example",  # presidio's own invalidation
        "SSN 123-45-6789 is another",
    ],
)
def test_not_detected(detectors: Detectors, text: str) -> None:
    assert found(detectors, text) == []


def test_ip_addresses_private_ranges_and_versions_are_not_personal(detectors: Detectors) -> None:
    got = found(detectors, "hosts 10.0.0.1, 192.168.1.20, 127.0.0.1, v1.2.3.4 and 8.8.4.4")
    assert got == [("IP_ADDRESS", "8.8.4.4")]


def test_phone_windows_cover_every_long_digit_run() -> None:
    text = "x +1 (415) 555-0132 y 1.6-88.1 z 4155550132"
    wins = phone_windows(text)
    for target in ("+1 (415) 555-0132", "4155550132"):
        i = text.index(target)
        assert any(s <= i and i + len(target) <= e for s, e in wins)


def test_ner_runs_only_when_planned(detectors: Detectors) -> None:
    text = "Angela Merkel met Barack Obama in Berlin."
    assert found(detectors, text) == []
    plan = DetectPlan(ner_entities=("PERSON", "LOCATION"))
    got = found(detectors, text, plan)
    assert ("PERSON", "Angela Merkel") in got and ("PERSON", "Barack Obama") in got
    assert ("LOCATION", "Berlin") in got


def test_ner_spans_map_back_across_items(detectors: Detectors) -> None:
    items = ["Nothing here.", "Barack Obama spoke.", "", "Then Angela Merkel replied."]
    fs = detectors.pii.detect(Layout(items), DetectPlan(ner_entities=("PERSON",)))
    assert sorted((f.item, items[f.item][f.start : f.end]) for f in fs) == [
        (1, "Barack Obama"), (3, "Angela Merkel"),
    ]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(start=st.integers(0, 5000), length=st.integers(0, 20_000), span=st.integers(1, 128))
def test_phone_pieces_cover_a_window_and_hold_every_short_number_whole(
    start: int, length: int, span: int
) -> None:
    end = start + length
    pieces = phone_pieces(start, end)
    assert pieces[0][0] == start and pieces[-1][1] == end
    assert all(e - s <= 2048 for s, e in pieces)
    assert all(a[1] > b[0] for a, b in itertools.pairwise(pieces))  # no gap
    if length >= span:  # a number of up to 128 characters anywhere lies whole in a piece
        for at in (start, (start + end - span) // 2, end - span):
            assert any(s <= at and at + span <= e for s, e in pieces)


def test_a_phone_number_inside_a_wide_tables_digit_run_is_still_found(
    detectors: Detectors,
) -> None:
    """A row of a wide CSV folded into one cell is tens of KB of digits and spaces: it
    is read in pieces (the deadline is checked between them), and a phone number across
    a piece boundary is still found whole."""
    run = " ".join(str(i % 10) for i in range(2_000))  # 3,999 characters
    apart = f"{run} call +1 415-555-0132 now {run}"
    assert ("PHONE_NUMBER", "+1 415-555-0132") in found(detectors, apart)
    # inside the run and across the first cut (2,048): the same as one whole window
    # gives (phonenumbers does not take a ``+1`` glued to the digits before it)
    glued = f"{run[:2040]} +1 415-555-0132 {run}"
    i = glued.index("415")
    assert i < 2048 < i + len("415-555-0132")
    assert ("PHONE_NUMBER", "415-555-0132") in found(detectors, glued)
    rec = detectors.pii._recognizers["PHONE_NUMBER"]
    whole = {glued[r.start : r.end] for r in rec.analyze(glued, ["PHONE_NUMBER"], None)}
    assert whole == {"415-555-0132"}


def test_a_long_digit_run_stops_at_the_deadline_between_pieces(
    detectors: Detectors, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline used to be checked once per pattern: a 40 KB run of digits (a
    20,000-column CSV's row) kept the phone matcher busy for seconds past it."""
    calls = 0

    def deadline_after_three(deadline: float | None) -> None:
        nonlocal calls
        calls += 1
        if calls > 3:
            raise ScanDeadline

    run = " ".join(str(i % 10) for i in range(20_000))
    assert len(phone_pieces(0, len(run))) > 20
    monkeypatch.setattr(pii, "check_deadline", deadline_after_three)
    with pytest.raises(ScanDeadline):
        detectors.pii.detect(Layout([run]), DEFAULT_PLAN, deadline=1.0)
    assert calls == 4  # stopped at the fourth check, not after the whole run
