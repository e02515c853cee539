"""Does a text name an identifier? Matched the way the lexical analyzer splits words, not
as a raw substring.

A raw, case-folded substring test (``"ifit1" in text.lower()``) misses spellings a
reader takes for the same name and finds names inside longer words:

- separators: ``IFIT-1`` / ``IFIT1`` / ``IFIT 1``, ``M2-like`` / ``M2‐like`` (U+2010),
  ``DENV-1`` / ``DENV1``: the standard tokenizer splits at every non-alphanumeric
  character, so these are the same tokens to BM25 and should be to this rule;
- compatibility forms: full-width ``ＳＵＰ－９９９９`` is ``SUP-9999`` after NFKC;
- word boundaries: ``gen-2`` is not in "oxygen 2", ``c1698`` not in "abc1698" or
  "C1698T".

An identifier is split into its letter runs and digit runs (``ifit1`` -> ``ifit``,
``1``); it matches where the text has those runs in order, each run whole, separated by
nothing but non-alphanumeric characters (at least one between two runs of the same kind,
which would otherwise be one run), with no letter or digit directly before the first or
after the last. The same test is used in Python (``matches``) and by the corpus-frequency
lookup in Postgres (``sql_pattern`` over ``ident_text``, which migration 0150 stores per
chunk; specificity.py), so "in no document" and "in a result" mean the same thing.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "canonical",
    "ident_text",
    "matches",
    "matches_any",
    "parts",
    "share_of_words",
    "sql_pattern",
    "words",
]

# a run of letters (any script) or a run of digits
_PART = re.compile(r"[^\W\d_]+|\d+")
_MAX_PARTS = 16  # a longer "identifier" is matched on its first 16 runs


# the stop words of the lexical leg's analyzer (OpenSearch "english" = Lucene's
# EnglishAnalyzer.ENGLISH_STOP_WORDS_SET)
# fmt: off
_STOP = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
))
# fmt: on
# a word as the standard tokenizer cuts it, near enough: a run of letters and digits
_WORD = re.compile(r"[^\W_]+")
_SEPARATORS = re.compile(r"[\W_]+")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def parts(ident: str) -> tuple[str, ...]:
    """The identifier's letter and digit runs, NFKC case-folded (``"SUP-9999"`` ->
    ``("sup", "9999")``); empty when it has no letter or digit."""
    return tuple(_PART.findall(_fold(ident)))[:_MAX_PARTS]


def canonical(ident: str) -> str:
    """One spelling per identifier: its runs joined by ``-`` (``ifit1``, ``IFIT-1`` and
    ``ifit 1`` are all ``ifit-1``)."""
    return "-".join(parts(ident))


def _joined(runs: tuple[str, ...], some: str, any_: str) -> str:
    """The runs in order: a letter run and a digit run may touch (``ifit1``), two runs of
    one kind need a separator (else they would be one run: ``e_r_r`` is not ``err``)."""
    out = [runs[0]]
    for prev, run in itertools.pairwise(runs):
        out.append(some if prev[0].isdigit() == run[0].isdigit() else any_)
        out.append(run)
    return "".join(out)


@lru_cache(maxsize=4096)
def _compiled(runs: tuple[str, ...]) -> re.Pattern[str]:
    body = _joined(tuple(re.escape(p) for p in runs), r"[\W_]+", r"[\W_]*")
    return re.compile(rf"(?<![^\W_]){body}(?![^\W_])")


def matches(ident: str, text: str) -> bool:
    """Whether ``text`` names ``ident`` (module docstring). An identifier without a letter
    or digit matches nothing."""
    runs = parts(ident)
    if not runs:
        return False
    return _compiled(runs).search(_fold(text)) is not None


def matches_any(idents: Iterable[str], text: str) -> bool:
    """Whether ``text`` names any of ``idents`` (``matches``), folding the text once."""
    folded: str | None = None
    for ident in idents:
        runs = parts(ident)
        if not runs:
            continue
        if folded is None:
            folded = _fold(text)
        if _compiled(runs).search(folded) is not None:
            return True
    return False


def ident_text(*parts_: str | None) -> str:
    """The text the corpus lookup matches in, as migration 0150's ``ragline_ident_text``
    stores it per chunk (title, contextual header, text): the parts joined by spaces,
    NFKC case-folded, every run of characters that are neither letter nor digit replaced
    by one space, one space added at each end (``" ifit-1 x"`` -> ``"  ifit 1 x "``)."""
    joined = " ".join(p or "" for p in parts_)
    return " " + _SEPARATORS.sub(" ", _fold(joined)) + " "


def sql_pattern(ident: str) -> str | None:
    """The same test as ``matches``, as a PostgreSQL regular expression over
    ``ident_text`` (``~``): the runs with one space between two of one kind, an optional
    one between a letter and a digit run, a space at each end (``" ifit ?1 "``); None when
    the identifier has no letter or digit. The runs are letters and digits only, so they
    need no escaping, and the pattern has no character class: it means the same under
    every collation."""
    runs = parts(ident)
    if not runs:
        return None
    return " " + _joined(runs, " ", " ?") + " "


def words(text: str) -> list[str]:
    """The text's words as the lexical leg indexes them, near enough: NFKC case-folded
    runs of letters and digits (``SUP-9999`` is ``sup``, ``9999``; ``Bcp1`` is ``bcp1``),
    stop words dropped. No stemming: only the share of identifier words is asked."""
    return [w for w in _WORD.findall(_fold(text)) if w not in _STOP]


def share_of_words(text: str, idents: Iterable[str]) -> float:
    """Which share of the text's words (``words``) belong to the given identifiers: 1.0
    for a bare identifier, small for a long claim that names one in passing; 0.0 for a
    text without words."""
    mine = {w for i in idents for w in words(i)}
    ws = words(text)
    return sum(1 for w in ws if w in mine) / len(ws) if ws else 0.0
