"""Abstention: better no evidence than weak evidence presented as an answer.

The signal is the best cosine similarity between the query and any returned chunk
(computed in the Postgres re-read for every result, lexical hits included), or the best
rerank score when a reranker ran and a rerank threshold is configured.

The exact-identifier rule, weighed by how specific each identifier is in the caller's
corpus (``IdentifierStats``: in how many of the documents the caller can see it occurs):

- a query naming an identifier (an error code, a ticket key) that is **specific** (in at
  most ``max(1, identifier_max_df_ratio * documents)`` documents) and appears verbatim in
  a result is answered even when similarity is low: embedding models are weak on such
  tokens and BM25 found the exact match;
- an identifier that occurs all over the corpus (a product model name) is no evidence:
  the similarity rule decides;
- when **every** identifier of the query occurs in no document at all and they are a
  real part of what is asked (at least ``identifier_missing_min_share`` of the query's
  words: "What was the root cause of SUP-9999?", not a long claim that names a position
  "(C1698)" in passing), that is a reason to abstain: the search abstains
  (``identifier_not_found``) unless its best similarity reaches the stricter
  ``identifier_missing_min_similarity``. "Occurs" is ``ident_match``'s test: case-folded,
  whole letter and digit runs, any separators ("IFIT1" is "IFIT-1").

Without statistics (the lookup failed) the rule falls back to "appears in a result".
Version mentions (``v6.1``, ``6.x``), tokens without a letter (dates) and quantities
(``100g``, ``5mmol``, ``10-minute``) are not identifiers for this rule.

A hybrid search whose caller's corpus statistics were read (``TermStats``) is first
weighed by the query's own words (term_evidence.py): just under the similarity threshold
it answers when the best lexical hit holds most of the query's information or one chunk
is a clear match of both legs; above it, it still abstains (``terms_not_found``) when
most of the query's information occurs nowhere in the caller's corpus and similarity is
below the stricter bar.

With ``AbstainPolicy.model`` set (``RAGLINE_QUERY_ABSTAIN_MODEL=answerability``, the
default) a hybrid search also gets the calibrated answerability model
(``answerability.py``): every response carries its probability and inputs, and the
model abstains (``low_answerability``) on what the rules above answer when the
probability is below its threshold (or the request's ``answerable_threshold``). The
rules stay where the measurement showed they add (docs/evaluation.md "Answerability":
on the golden sets they carry every abstention the model does not). Dense-only and
lexical-only searches keep the rules alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ragline.retrieval.answerability import WINDOW, AnswerabilityModel, features
from ragline.retrieval.ident_match import matches, share_of_words
from ragline.retrieval.term_evidence import TermPolicy, TermStats, decide_by_terms

__all__ = [
    "AbstainPolicy",
    "Assessment",
    "Evidence",
    "IdentifierStats",
    "Signal",
    "assess",
    "decide",
    "identifiers",
    "rule_identifiers",
]

# which rule decided: a caller replaying the rule at another threshold (the evaluation
# harness's sweep) may only move the decisions the similarity threshold made
Signal = Literal["no_results", "identifier", "rerank", "similarity", "model", "terms", "none"]

# tokens with a digit and a letter or a separator (ERR-4711, KB00123, 0x1F, v2-api)
_IDENT_RE = re.compile(r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z_-])[\w][\w.-]{2,}\b")
_VERSION_TOKEN_RE = re.compile(r"^v?\d+(?:\.\d+)*(?:\.[x*])?$")
_QUANTITY_RE = re.compile(r"^\d+(?:[.,]\d+)*-?[a-z]+$")  # 100g, 5mmol, 10-minute, 3-fold
_LETTER_RE = re.compile(r"[a-z]")


@dataclass(frozen=True, kw_only=True)
class AbstainPolicy:
    min_similarity: float = 0.325  # QuerySettings.abstain_min_similarity
    min_rerank: float | None = None
    # an identifier in more than this share of the caller's documents is not specific
    identifier_max_df_ratio: float = 0.1
    # no identifier of the query occurs anywhere: answer only above this similarity ...
    identifier_missing_min_similarity: float = 0.39  # fitted: bench/tune.py idents
    # ... when those identifiers are at least this share of the query's words (a claim
    # naming one in passing is not a question about it: ident_match.share_of_words)
    identifier_missing_min_share: float = 0.25  # fitted: bench/tune.py idents
    # hybrid searches: the calibrated answerability model (answerability.py); None: rules
    model: AnswerabilityModel | None = None
    # the query's words in the caller's corpus (term_evidence.py); None: off
    terms: TermPolicy | None = field(default_factory=TermPolicy)


@dataclass(frozen=True, kw_only=True)
class IdentifierStats:
    """How specific identifiers are in the caller's corpus (read under RLS)."""

    documents: int  # documents the caller can see
    df: Mapping[str, int] = field(default_factory=dict)  # identifier -> documents holding it


@dataclass(frozen=True, kw_only=True)
class Evidence:
    text: str
    similarity: float | None
    rerank: float | None
    # what the fusion saw (abstain_model.Signals); None when that leg did not find it
    bm25_score: float | None = None
    dense_rank: int | None = None
    bm25_rank: int | None = None


def identifiers(query: str) -> set[str]:
    return {m.group(0).lower() for m in _IDENT_RE.finditer(query)}


def rule_identifiers(queries: Sequence[str]) -> set[str]:
    """The identifiers the abstention rule weighs: with a letter, not a version mention."""
    found = set().union(*(identifiers(q) for q in queries)) if queries else set()
    return {
        i
        for i in found
        if _LETTER_RE.search(i) and not _VERSION_TOKEN_RE.match(i) and not _QUANTITY_RE.match(i)
    }


@dataclass(frozen=True, kw_only=True)
class Assessment:
    """The decision and the evidence strength behind it (the best scores are over every
    candidate result, whichever rule decided)."""

    reason: str | None
    signal: Signal
    best_similarity: float | None
    best_rerank: float | None
    threshold: float | None
    # the model's calibrated probability that the visible corpus answers (hybrid only)
    answerable_probability: float | None = None
    features: Mapping[str, float | None] | None = None


def assess(
    results: Sequence[Evidence],
    queries: Sequence[str],
    policy: AbstainPolicy,
    stats: IdentifierStats | None = None,
    terms: TermStats | None = None,
    *,
    threshold: float | None = None,
    hybrid: bool | None = None,
    sentence_sims: Sequence[float] | None = None,
) -> Assessment:
    """``threshold``: the request's own answerability threshold (the model's otherwise).
    ``hybrid``: both legs ran (the service knows; None: inferred from the results' ranks,
    which misses a lexical leg that ran and found nothing). ``sentence_sims``: the query's
    cosine with each sentence of the first results (answerability.sentences), when the
    service embedded them."""
    sims = [r.similarity for r in results if r.similarity is not None]
    reranked = [r.rerank for r in results if r.rerank is not None]
    best_sim = max(sims) if sims else None
    best_rr = max(reranked) if reranked else None

    def out(reason: str | None, signal: Signal, threshold: float | None = None) -> Assessment:
        return Assessment(
            reason=reason,
            signal=signal,
            best_similarity=best_sim,
            best_rerank=best_rr,
            threshold=threshold,
        )

    if not results:
        return Assessment(
            reason="no_results",
            signal="no_results",
            best_similarity=None,
            best_rerank=None,
            threshold=None,
            answerable_probability=0.0 if policy.model is not None else None,
        )
    idents = rule_identifiers(queries)
    if hybrid is None:
        hybrid = any(r.bm25_rank is not None for r in results) and any(
            r.dense_rank is not None for r in results
        )
    ruled = _by_rules(results, queries, policy, idents, stats, terms, out, best_sim, best_rr)
    if policy.model is None or not hybrid:
        return ruled
    x = features(
        results,
        terms=terms,
        ident_missing=_ident_missing(idents, queries, stats),
        ident_hit=_ident_hit(idents, results, stats, policy),
        has_number=any(c.isdigit() for q in queries for c in q),
        query=" ".join(queries),
        sentence_sims=sentence_sims,
    )
    if x is None:
        return ruled
    # hybrid: the rules and the model together; the model abstains on what the rules
    # answer when the probability is below the (request's) threshold, and every hybrid
    # response carries the probability (docs/evaluation.md "Answerability")
    p = policy.model.probability(x)
    bar = policy.model.threshold if threshold is None else threshold
    if ruled.reason is None and p < bar:
        ruled = out("low_answerability", "model", bar)
    return replace(ruled, answerable_probability=p, features=x)


def _by_rules(
    results: Sequence[Evidence],
    queries: Sequence[str],
    policy: AbstainPolicy,
    idents: set[str],
    stats: IdentifierStats | None,
    terms: TermStats | None,
    out: Callable[..., Assessment],
    best_sim: float | None,
    best_rr: float | None,
) -> Assessment:
    """The rules: a missing identifier, a specific identifier matched, the rerank or
    similarity threshold, the query's words near it (term_evidence.py)."""
    if idents and stats is not None:
        if all(stats.df.get(i, 0) == 0 for i in idents):
            bar = policy.identifier_missing_min_similarity
            central = share_of_words(" ".join(queries), idents)
            if (best_sim is None or best_sim < bar) and (
                central >= policy.identifier_missing_min_share
            ):
                return out("identifier_not_found", "identifier", bar)
            idents = set()
        idents = _specific(idents, stats, policy)
    if idents and any(matches(i, r.text) for r in results for i in idents):
        return out(None, "identifier")
    if policy.min_rerank is not None and best_rr is not None:
        low = best_rr < policy.min_rerank
        return out("below_rerank_threshold" if low else None, "rerank", policy.min_rerank)
    if best_sim is None:
        return out(None, "none")  # lexical-only search: no calibrated signal, BM25 matched
    if terms is not None and policy.terms is not None:
        by_terms = decide_by_terms(results, best_sim, policy.min_similarity, terms, policy.terms)
        if by_terms is not None:
            decision, bar = by_terms
            return out("terms_not_found" if decision == "abstain" else None, "terms", bar)
    low = best_sim < policy.min_similarity
    return out("below_similarity_threshold" if low else None, "similarity", policy.min_similarity)


def _specific(idents: set[str], stats: IdentifierStats, policy: AbstainPolicy) -> set[str]:
    """The identifiers rare enough in the caller's corpus to be evidence when matched."""
    limit = max(1.0, policy.identifier_max_df_ratio * stats.documents)
    return {i for i in idents if 0 < stats.df.get(i, 0) <= limit}


def _ident_missing(
    idents: set[str], queries: Sequence[str], stats: IdentifierStats | None
) -> float | None:
    """The share of the query's words that are identifiers found in no visible document
    (0 without identifiers; None when their statistics could not be read)."""
    if not idents:
        return 0.0
    if stats is None:
        return None
    gone = {i for i in idents if stats.df.get(i, 0) == 0}
    return share_of_words(" ".join(queries), gone) if gone else 0.0


def _ident_hit(
    idents: set[str],
    results: Sequence[Evidence],
    stats: IdentifierStats | None,
    policy: AbstainPolicy,
) -> bool:
    """A specific identifier of the query (any, without statistics) occurs in a result."""
    wanted = _specific(idents, stats, policy) if stats is not None else idents
    return any(matches(i, r.text) for r in results[:WINDOW] for i in wanted)


def decide(
    results: Sequence[Evidence],
    queries: Sequence[str],
    policy: AbstainPolicy,
    stats: IdentifierStats | None = None,
    terms: TermStats | None = None,
) -> str | None:
    """The abstain reason, or None to answer."""
    return assess(results, queries, policy, stats, terms).reason
