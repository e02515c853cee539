"""Diversity: at most N chunks per document, and optional Maximal Marginal Relevance.

MMR picks, one at a time, the candidate maximizing
``lambda * relevance - (1 - lambda) * max cosine similarity to what is already picked``,
so near-duplicate chunks do not crowd out other evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["cap_per_document", "mmr_order"]

T = TypeVar("T")


def cap_per_document(items: Sequence[T], doc_of: Callable[[T], str], max_per_doc: int) -> list[T]:
    """Keep the order; drop an item once its document already has ``max_per_doc``."""
    if max_per_doc < 1:
        raise ValueError("max_per_doc must be >= 1")
    counts: dict[str, int] = {}
    out: list[T] = []
    for it in items:
        d = doc_of(it)
        if counts.get(d, 0) < max_per_doc:
            counts[d] = counts.get(d, 0) + 1
            out.append(it)
    return out


def mmr_order(
    relevance: Sequence[float],
    vectors: Sequence[npt.ArrayLike | None],
    *,
    lam: float,
    limit: int,
) -> list[int]:
    """Indices in MMR order. Relevance is min-max normalized; an item without a vector
    is treated as dissimilar to everything (it never gets penalized)."""
    n = len(relevance)
    if n == 0 or limit <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    span = float(rel.max() - rel.min())
    rel = (rel - rel.min()) / span if span > 0 else np.ones_like(rel)
    vecs: list[npt.NDArray[np.float64] | None] = []
    for v in vectors:
        if v is None:
            vecs.append(None)
            continue
        a = np.asarray(v, dtype=np.float64)
        norm = float(np.linalg.norm(a))
        vecs.append(a / norm if norm > 0 else None)
    chosen: list[int] = []
    max_sim = np.zeros(n)
    remaining = set(range(n))
    while remaining and len(chosen) < limit:
        best = max(remaining, key=lambda i: (lam * rel[i] - (1 - lam) * max_sim[i], -i))
        chosen.append(best)
        remaining.discard(best)
        bv = vecs[best]
        if bv is None:
            continue
        for i in remaining:
            vi = vecs[i]
            if vi is not None:
                max_sim[i] = max(max_sim[i], float(vi @ bv))
    return chosen
