"""Injection detection by class, measured on template families it was not fitted to.

The corpus (``ragline.scanning.injection_corpus``) is split by family with a fixed seed;
the held-out half must be caught with recall >= 0.95 (at the low trust level injections
are planted in) while benign look-alikes (advisories that discuss injection, policy
replies, runbooks) are flagged at most 2 % of the time, at every trust level. Flagging
never changes text: the scanner returns rule ids, the chunk stays retrievable.
Deterministic (no timing): the numbers are printed by bench/injection_eval.py."""

from __future__ import annotations

from typing import Any

import pytest

from ragline.events import TrustLevel
from ragline.scanning.injection import InjectionScanner
from ragline.scanning.injection_classes import CLASS_RULES
from ragline.scanning.injection_corpus import INJECTION_FAMILIES, corpus, split
from ragline.scanning.injection_eval import measure

from .test_linear_time import _nested_unbounded, sre_parse

FIT, HELD = split(corpus())


def test_the_split_is_by_family_and_covers_every_class() -> None:
    fit_fams = {s.family for s in FIT}
    held_fams = {s.family for s in HELD}
    assert not fit_fams & held_fams
    classes = {k for k, _ in INJECTION_FAMILIES.values()}
    for half in (FIT, HELD):
        assert {s.klass for s in half if s.injection} == classes
        assert any(not s.injection for s in half)


def test_held_out_recall_and_false_positive_rate() -> None:
    m = measure(HELD)
    assert m.injections >= 200 and m.benign >= 60
    assert m.recall >= 0.95, (m.recall, m.by_class)
    assert m.fp_rate <= 0.02, (m.fp_rate, m.false_positives)
    for klass, (hit, n) in m.by_class.items():
        if not klass.startswith("benign"):
            assert hit / n >= 0.9, (klass, hit, n)


def test_every_injection_class_flags_without_changing_text() -> None:
    sc = InjectionScanner()
    for s in HELD:
        if s.injection:
            before = s.text
            sc.scan(s.text, s.trust)
            assert s.text == before


def test_benign_look_alikes_stay_unflagged_at_high_trust() -> None:
    sc = InjectionScanner()
    flagged = [s.family for s in FIT + HELD if not s.injection and sc.scan(s.text, TrustLevel.HIGH)]
    assert len(flagged) <= 0.02 * sum(not s.injection for s in FIT + HELD), flagged


@pytest.mark.parametrize("rule", CLASS_RULES, ids=lambda r: r.id)
def test_class_rules_never_nest_a_repeat_in_an_unbounded_one(rule: Any) -> None:
    """Clause leads repeated ("and and and ...") made an unbounded lead loop quadratic
    (52 s at 20 KB); every loop in a class rule is bounded."""
    assert _nested_unbounded(sre_parse.parse(rule.regex.pattern, rule.regex.flags)) == []


@pytest.mark.timeout(300)
@pytest.mark.parametrize("unit", ["and ", "please ", "you must ", "assistant, ", "the your "])
def test_repeated_clause_leads_finish(unit: str) -> None:
    """At 200 KB a quadratic rule takes hours; the test's own timeout fails it."""
    InjectionScanner().scan(unit * (200_000 // len(unit)), TrustLevel.LOW)
