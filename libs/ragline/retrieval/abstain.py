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

__all__ = ["AbstainPolicy", "Evidence", "decide", "identifiers"]

# tokens with a digit and a letter or a separator (ERR-4711, KB00123, 0x1F, v2-api)
_IDENT_RE = re.compile(r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z_-])[\w][\w.-]{2,}\b")


@dataclass(frozen=True, kw_only=True)
class AbstainPolicy:
    min_similarity: float = 0.30
    min_rerank: float | None = None


@dataclass(frozen=True, kw_only=True)
class Evidence:
    text: str
    similarity: float | None
    rerank: float | None


def identifiers(query: str) -> set[str]:
    return {m.group(0).lower() for m in _IDENT_RE.finditer(query)}


def decide(
    results: Sequence[Evidence], queries: Sequence[str], policy: AbstainPolicy
) -> str | None:
    """The abstain reason, or None to answer."""
    if not results:
        return "no_results"
    idents = set().union(*(identifiers(q) for q in queries)) if queries else set()
    if idents and any(i in r.text.lower() for r in results for i in idents):
        return None
    reranked = [r.rerank for r in results if r.rerank is not None]
    if policy.min_rerank is not None and reranked:
        return None if max(reranked) >= policy.min_rerank else "below_rerank_threshold"
    sims = [r.similarity for r in results if r.similarity is not None]
    if not sims:
        return None  # lexical-only search: no calibrated signal, BM25 matched something
    if max(sims) < policy.min_similarity:
        return "below_similarity_threshold"
    return None
