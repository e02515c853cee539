"""Which NER ``PERSON`` spans can be persons: tables fool a small model.

spaCy's small English model reads a table's cells and its rendered text without the
sentence context it was trained on and calls short cells persons: ``max`` and ``L4`` in
a salary table without a single name gave ``pii:PERSON: 3`` (measured with
``bench/pii_person_tables.py`` on a labelled fixture of table cells). A span is not a
person when it holds a digit (band codes, amounts), when it is one word that is all
lowercase or a table/statistics word (``Min``, ``Max``, ``Total``), when it crosses a
rendered table's ``|``, or when any of its words is a job-title or department word
(``Senior Engineer``, ``Head of People``, ``Customer Success``): they describe roles and
teams, not people. Names next to a title (``Maria Garcia, Senior Engineer``) are
separate spans and stay found.
"""

from __future__ import annotations

import re

__all__ = ["plausible_person"]

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# one-word cells a table uses as labels: never a person's whole name
_TABLE_WORDS = _words("""
    min max mid median mean avg average total sum count band grade level step tier role
    title rate salary bonus equity base range target currency amount budget headcount
    name team department location status owner approved pending draft final
""")
# words of job titles and departments (left out on purpose: words that are also common
# names or surnames, e.g. dean, judge, major, bishop, mason, baker, taylor, marshal)
_JOB_WORDS = _words("""
    engineer engineering developer architect analyst scientist consultant specialist
    coordinator administrator admin assistant associate executive officer president vp
    svp evp ceo cto cfo coo ciso intern manager director head chief principal senior
    junior staff lead designer recruiter accountant technician representative
    supervisor counsel agent advisor auditor controller editor operator programmer
    researcher strategist tester trainee secretary treasurer clerk receptionist
    salesperson marketing sales finance hr payroll support success operations legal
    compliance procurement facilities infrastructure
""")


def plausible_person(span: str) -> bool:
    """False for a PERSON span that is a number, a table label or a job title."""
    if any(c.isdigit() for c in span) or "|" in span:  # "|": across a rendered table's cells
        return False
    words = _WORD.findall(span)
    if not words:
        return False
    lower = [w.lower() for w in words]
    if len(words) == 1 and (words[0].islower() or lower[0] in _TABLE_WORDS):
        return False
    return not any(w in _JOB_WORDS for w in lower)
