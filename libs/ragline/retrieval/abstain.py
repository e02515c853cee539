"""Abstention: better no evidence than weak evidence presented as an answer.

The signal is the best cosine similarity between the query and any returned chunk
(computed in the Postgres re-read for every result, lexical hits included), or the best
rerank score when a reranker ran and a rerank threshold is configured. One exception:
a query naming an exact identifier (an error code, a ticket key) that appears verbatim
in a result is answered even when similarity is low, because embedding models are weak
on such tokens and BM25 found the exact match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["AbstainPolicy", "Assessment", "Evidence", "Signal", "assess", "decide", "identifiers"]

# which rule decided: a caller replaying the rule at another threshold (the evaluation
# harness's sweep) may only move the decisions the similarity threshold made
Signal = Literal["no_results", "identifier", "rerank", "similarity", "none"]

# tokens with a digit and a letter or a separator (ERR-4711, KB00123, 0x1F, v2-api)
_IDENT_RE = re.compile(r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z_-])[\w][\w.-]{2,}\b")


@dataclass(frozen=True, kw_only=True)
class AbstainPolicy:
    min_similarity: float = 0.325  # QuerySettings.abstain_min_similarity
    min_rerank: float | None = None


@dataclass(frozen=True, kw_only=True)
class Evidence:
    text: str
    similarity: float | None
    rerank: float | None


def identifiers(query: str) -> set[str]:
    return {m.group(0).lower() for m in _IDENT_RE.finditer(query)}


@dataclass(frozen=True, kw_only=True)
class Assessment:
    """The decision and the evidence strength behind it (the best scores are over every
    candidate result, whichever rule decided)."""

    reason: str | None
    signal: Signal
    best_similarity: float | None
    best_rerank: float | None
    threshold: float | None


def assess(
    results: Sequence[Evidence], queries: Sequence[str], policy: AbstainPolicy
) -> Assessment:
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
        return out("no_results", "no_results")
    idents = set().union(*(identifiers(q) for q in queries)) if queries else set()
    if idents and any(i in r.text.lower() for r in results for i in idents):
        return out(None, "identifier")
    if policy.min_rerank is not None and best_rr is not None:
        low = best_rr < policy.min_rerank
        return out("below_rerank_threshold" if low else None, "rerank", policy.min_rerank)
    if best_sim is None:
        return out(None, "none")  # lexical-only search: no calibrated signal, BM25 matched
    low = best_sim < policy.min_similarity
    return out("below_similarity_threshold" if low else None, "similarity", policy.min_similarity)


def decide(
    results: Sequence[Evidence], queries: Sequence[str], policy: AbstainPolicy
) -> str | None:
    """The abstain reason, or None to answer."""
    return assess(results, queries, policy).reason
