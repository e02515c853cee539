"""Abstention from the query's own words: how much of what a question asks about exists in
the caller's corpus, and how much of it the best lexical match holds (issue 21 defect 5,
issue 20 item 3; docs/evaluation.md "Abstention").

One dense-cosine threshold mixes up two things: a question whose words the corpus does
not use although it answers it (golden ``pp-02``: "a better seat on long-haul flights"
vs "business class ... flights longer than 8 hours", cosine 0.294), and a question about
something the corpus never mentions (``pm-07`` "which vendor supplies our laptops", cosine
0.347 to an unrelated chunk). Term statistics of the caller's corpus
(``TermStats``, read from the lexical index under the lexical leg's scope filters,
term_stats.py: in how many of the caller's chunks each English-stemmed word of the query
occurs) tell them apart, weighted by BM25's IDF so that rare words count most:

- ``missing_share``: the IDF share of the query's words that occur in no chunk the caller
  can see. Above ``max_missing_share`` the corpus has nothing on most of what is asked:
  the search needs the stricter ``missing_min_similarity`` to answer (signal ``terms``,
  reason ``terms_not_found``), unless the answer is a clear match (below).
- ``top_coverage``: the IDF share of the query's words that the best lexical hit holds. A
  search just under the similarity threshold (within ``band``) whose best lexical hit
  holds at least ``min_top_coverage`` of the query's information is answered: the words
  are there, the embedding is what is weak (marine ``mtl-07``: a price-list table row).
- a **clear match**: the first result is the first of the dense leg and among the first
  three of the lexical leg, and its similarity stands ``clear_match_gap`` above every
  other result's: both retrievers independently put one chunk first and nothing else is
  close. Answered within ``band`` of the threshold, and not subject to the missing-words
  rule (a vocabulary gap is exactly a match without shared words).

Only hybrid searches use this (both legs are needed); without statistics (the lookup
failed or timed out) the similarity threshold decides alone, as before.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

__all__ = [
    "MAX_TERMS",
    "TermPolicy",
    "TermStats",
    "asked_about",
    "clear_match",
    "decide_by_terms",
    "query_terms",
]

MAX_TERMS = 32  # words of one query weighed (sorted); a longer query keeps the first 32

# "how long", "how many", "how often", ...: the adverb after "how" asks for a measure
# (duration, count, frequency, distance, ...); the question is not about the word itself
_MEASURE_QUESTION = re.compile(
    r"\b(how)\s+(long|many|much|often|far|soon|old|big|large|small|tall|wide|deep|fast"
    r"|quickly|heavy|high|low|late|early|frequently)\b",
    re.IGNORECASE,
)


def asked_about(text: str) -> str:
    """``text`` with the measure adverbs of its questions blanked ("how long does X take"
    -> "how      does X take"): what the coverage of a question is measured over. Offsets
    of the other words are kept."""
    return _MEASURE_QUESTION.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - 3), text)


def query_terms(tokens: Iterable[str | None] | None) -> list[str]:
    """The distinct words weighed, sorted, at most ``MAX_TERMS``."""
    return sorted({str(t) for t in (tokens or ()) if t})[:MAX_TERMS]


@dataclass(frozen=True, kw_only=True)
class TermPolicy:
    band: float = 0.05  # how far below the similarity threshold term evidence may answer
    min_top_coverage: float = 0.5
    clear_match_gap: float = 0.1
    max_missing_share: float = 0.55  # fitted: bench/tune.py terms
    missing_min_similarity: float = 0.375  # fitted: bench/tune.py terms


@dataclass(frozen=True, kw_only=True)
class TermStats:
    """The query's words in the caller's corpus (the lexical index under the caller's
    scope, term_stats.py)."""

    chunks: int  # child chunks the caller can see
    df: Mapping[str, int] = field(default_factory=dict)  # query word -> chunks holding it
    top: frozenset[str] = frozenset()  # the query words the best lexical hit holds

    def idf(self, term: str) -> float:
        """BM25's (Lucene's) IDF; a word in no chunk gets the highest."""
        n = max(self.chunks, 0)
        d = min(max(self.df.get(term, 0), 0), n)
        # log1p: at corpus sizes near 2**52 the ratio falls below float epsilon and
        # log(1 + ratio) rounds to 0 (a word in every chunk still has some weight)
        return math.log1p((n - d + 0.5) / (d + 0.5))

    def _share(self, terms: Sequence[str], over: Iterable[str] | None = None) -> float | None:
        """IDF share of ``terms`` among ``over`` (default: every query word)."""
        total = sum(self.idf(t) for t in (self.df if over is None else over))
        if total <= 0:
            return None
        return sum(self.idf(t) for t in terms) / total

    @property
    def missing_share(self) -> float | None:
        """IDF share of the query's words that no chunk holds (None: no words)."""
        return self._share([t for t, d in self.df.items() if d <= 0])

    @property
    def top_coverage(self) -> float | None:
        """IDF share of the query's words that the best lexical hit holds."""
        return self._share([t for t in self.df if t in self.top])

    @property
    def top_coverage_present(self) -> float | None:
        """IDF share of the query's words found in the caller's corpus that the best
        lexical hit holds (None: no such word). Unlike ``top_coverage`` a word the corpus
        lacks does not count against it: in a small corpus plain words occur nowhere and
        get the highest IDF (the fusion's coverage weighting)."""
        present = [t for t, d in self.df.items() if d > 0]
        return self._share([t for t in present if t in self.top], over=present)


class Ranked(Protocol):
    @property
    def similarity(self) -> float | None: ...
    @property
    def dense_rank(self) -> int | None: ...
    @property
    def bm25_rank(self) -> int | None: ...


def clear_match(results: Sequence[Ranked], gap: float) -> bool:
    """The first result is dense's first and lexical's top 3, and its similarity is at
    least ``gap`` above every other result's."""
    if not results:
        return False
    first = results[0]
    if first.dense_rank != 1 or first.bm25_rank is None or first.bm25_rank > 3:
        return False
    top = first.similarity
    if top is None or not math.isfinite(top):
        return False
    others = [s for r in results[1:] if (s := r.similarity) is not None and math.isfinite(s)]
    return not others or top - max(others) >= gap


Decision = Literal["answer", "abstain"]


def decide_by_terms(
    results: Sequence[Ranked],
    best_similarity: float,
    min_similarity: float,
    stats: TermStats,
    policy: TermPolicy,
) -> tuple[Decision, float] | None:
    """``(decision, the threshold it used)`` when the term evidence decides, else None
    (the similarity threshold decides as before)."""
    if best_similarity < min_similarity:
        floor = min_similarity - policy.band
        if best_similarity < floor:
            return None
        cov = stats.top_coverage
        if (cov is not None and cov >= policy.min_top_coverage) or clear_match(
            results, policy.clear_match_gap
        ):
            return "answer", floor
        return None
    missing = stats.missing_share
    if (
        missing is not None
        and missing >= policy.max_missing_share
        and best_similarity < policy.missing_min_similarity
        and not clear_match(results, policy.clear_match_gap)
    ):
        return "abstain", policy.missing_min_similarity
    return None
