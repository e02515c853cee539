"""Identifier matching as the lexical analyzer splits words (retrieval/ident_match.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.retrieval.ident_match import canonical, ident_text, matches, parts, sql_pattern


@pytest.mark.parametrize(
    ("ident", "text"),
    [
        ("ifit1", "Interferon-induced IFIT-1 restricts"),
        ("ifit-1", "the ifit1 gene"),
        ("m2-like", "an M2\u2010like phenotype"),  # U+2010 hyphen
        ("denv-1", "serotype DENV1 spread"),
        ("sup-9999", "\uff33\uff35\uff30\uff0d\uff19\uff19\uff19\uff19 closed"),  # full width
        ("c1698", "at the +5 position (C1698)."),
        ("agw-4290", "AGW-4290: upstream timeout"),
        ("tn-310", "the TN 310 control head"),
        ("sev1", "a SEV-1 page"),
        ("acme-sa-2025-007", "advisory ACME-SA-2025-007."),
        ("err_4711", "error err-4711 raised"),
        ("sup-9999", "SUP\u200b-9999"),  # a zero-width space is a separator
    ],
)
def test_spellings_of_one_name_match(ident: str, text: str) -> None:
    assert matches(ident, text)


@pytest.mark.parametrize(
    ("ident", "text"),
    [
        ("gen-2", "oxygen 2 levels"),  # no run may start inside a word
        ("c1698", "abc1698"),
        ("c1698", "the C1698T variant"),  # nor end inside one
        ("rpl23", "Rpl230 and Rpl2 3x"),
        ("sup-9999", "SUP-99990"),
        ("sup-9999", "SUP-4471 and 9999 others"),  # runs must be adjacent
        ("bcp1", "BCP 2"),
        ("mf-221", ""),
        ("e_r_r-4711", "err-4711"),  # two letter runs are not one
        ("acme-sa-1", "acmesa-1"),
        ("a-1-2", "a-12"),
    ],
)
def test_other_names_do_not(ident: str, text: str) -> None:
    assert not matches(ident, text)


def test_runs_and_canonical_form() -> None:
    assert parts("SUP-9999") == ("sup", "9999")
    assert parts("ScPif1p") == ("scpif", "1", "p")
    assert canonical("IFIT1") == canonical("ifit-1") == canonical("Ifit 1") == "ifit-1"
    assert parts("--") == () and parts("\x00") == () and parts("") == ()


@pytest.mark.parametrize("ident", ["", "--", "_._", "\x00", "\ud800", "   "])
def test_no_letter_or_digit_matches_nothing(ident: str) -> None:
    assert not matches(ident, "anything -- _._ at all \x00")
    assert sql_pattern(ident) is None


def test_hostile_text() -> None:
    text = "\x00" + "a" * 200_000 + " SUP-9999 " + "\ud800" + "\u200d" * 1000
    assert matches("sup-9999", text)
    assert not matches("sup-9998", text)
    assert matches(str(2**63), f"id {2**63} end")
    assert not matches(str(2**63), f"id {2**63}1 end")


def test_sql_pattern_is_runs_spaces_and_optional_spaces() -> None:
    assert sql_pattern("SUP-9999") == " sup ?9999 "
    assert sql_pattern("tn-e-214") == " tn e ?214 "
    assert ident_text("IFIT-1", None, "x\u200bY") == " ifit 1 x y "
    # regular-expression and LIKE metacharacters never reach the pattern
    for hostile in (".*", "a|b", "x(1)", "a\\1", "%_", "[a-z]+1", "a{2}1", "^$1", "\x00\ud800"):
        p = sql_pattern(hostile)
        if p is None:  # no letter or digit at all: nothing is looked up
            assert not any(ch.isalnum() for ch in hostile)
            continue
        assert all(run.isalnum() for run in p.replace(" ?", " ").split()), p


@settings(max_examples=500, deadline=None)
@given(
    ident=st.text(alphabet="abcXY019-_.\u200b\uff21\ufb01\u0301\u00df", min_size=1, max_size=12)
    | st.text(max_size=8),
    text=st.text(alphabet="abcXYZ019-_. ()+\u200b\uff21\uff11\ufb01\u0301\u00df\u1e9e", max_size=40)
    | st.text(max_size=40),
)
def test_sql_pattern_over_ident_text_is_matches(ident: str, text: str) -> None:
    """What the Postgres lookup runs (the pattern over the stored text; the stored text
    is ident_text, tests/integration/query/test_identifier_text.py) decides as matches."""
    p = sql_pattern(ident)
    if p is None:
        assert not matches(ident, text)
        return
    assert (re.search(p, ident_text(text)) is not None) == matches(ident, text)


@settings(max_examples=300, deadline=None)
@given(ident=st.from_regex(r"[A-Za-z]{1,4}[-_. ]?[0-9]{1,5}", fullmatch=True), data=st.data())
def test_every_separator_spelling_matches(ident: str, data: st.DataObject) -> None:
    sep = data.draw(st.sampled_from(["", "-", " ", "_", ".", "\u2010", "\u200b"]))
    runs = parts(ident)
    spelled = sep.join(r.upper() if data.draw(st.booleans()) else r for r in runs)
    assert matches(ident, f"see {spelled}, then")
    assert not matches(ident, f"see x{spelled}y")


def test_words_and_their_identifier_share() -> None:
    from ragline.retrieval.ident_match import share_of_words, words

    assert words("What was the root cause of ticket SUP-9999?") == [
        "what", "root", "cause", "ticket", "sup", "9999",
    ]  # fmt: skip
    assert share_of_words("SUP-9999", ["sup-9999"]) == 1.0
    assert share_of_words("What was the root cause of ticket SUP-9999?", ["sup-9999"]) == 2 / 6
    claim = "Stacking is more stable when a purine is present in the +5 position (C1698)."
    assert share_of_words(claim, ["c1698"]) == 1 / 9
    assert share_of_words("Bcp1 is a chaperone for Rpl23.", ["bcp1", "rpl23"]) == 2 / 3
    assert share_of_words("", ["x1"]) == 0.0 and share_of_words("the of", ["x1"]) == 0.0
    assert share_of_words("\x00\ud800 x1", ["x1"]) == 1.0


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200), idents=st.lists(st.text(max_size=12), max_size=4))
def test_share_is_a_share(text: str, idents: list[str]) -> None:
    from ragline.retrieval.ident_match import share_of_words

    assert 0.0 <= share_of_words(text, idents) <= 1.0
