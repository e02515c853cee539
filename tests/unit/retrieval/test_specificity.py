"""The identifier lookup's phrases over the lexical index's ``ident`` field (whitespace
tokens of ``ident_text``, store/os_index.py) decide exactly as ``ident_match.matches``."""

from __future__ import annotations

import itertools

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ragline.retrieval.ident_match import ident_text, matches, parts
from ragline.retrieval.specificity import ident_phrases, ident_query


def _phrase_in(phrase: str, text: str) -> bool:
    """What ``match_phrase`` on a whitespace-analysed field does: the phrase's tokens
    consecutive among the text's."""
    want, have = phrase.split(), ident_text(text).split()
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


@settings(max_examples=600, deadline=None)
@given(
    ident=st.text(alphabet="abcXY019-_.\u200b\uff21\ufb01\u0301\u00df", min_size=1, max_size=12)
    | st.text(max_size=8),
    text=st.text(alphabet="abcXYZ019-_. ()+\u200b\uff21\uff11\ufb01\u0301\u00df\u1e9e", max_size=40)
    | st.text(max_size=40),
)
def test_phrases_over_the_ident_field_are_matches(ident: str, text: str) -> None:
    runs = parts(ident)
    assume(sum(a[0].isdigit() != b[0].isdigit() for a, b in itertools.pairwise(runs)) <= 5)
    phrases = ident_phrases(ident)
    assert any(_phrase_in(p, text) for p in phrases) == matches(ident, text)


def test_letter_digit_joints_go_both_ways_and_same_kind_runs_never_join() -> None:
    assert sorted(ident_phrases("IFIT-1")) == ["ifit 1", "ifit1"]
    assert sorted(ident_phrases("ＳＵＰ－９９９９")) == ["sup 9999", "sup9999"]
    assert sorted(ident_phrases("tn-e-214")) == ["tn e 214", "tn e214"]
    assert sorted(ident_phrases("c1698t")) == ["c 1698 t", "c 1698t", "c1698 t", "c1698t"]
    assert ident_phrases("--") == [] and ident_phrases("") == []
    assert len(ident_phrases("a1b2c3")) == 32  # five joints, each either way
    long = ident_phrases("x0x0x0x0")  # seven joints: the last two both split or both joined
    assert len(long) == 64 and "x0x0x0x0" in long and "x 0 x 0 x 0 x 0" in long
    q = ident_query("err-4711")["bool"]
    assert q["minimum_should_match"] == 1 and len(q["should"]) == 2
