"""Reciprocal Rank Fusion: ``score(d) = sum_i w_i / (k + rank_i(d))`` with 1-based ranks.

RRF needs no score calibration between BM25 and cosine similarity, which is why it is
the default; weights let one retriever count more. Ties break by the best single rank,
then by id, so the order is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["FusedHit", "rrf"]


@dataclass(frozen=True, kw_only=True)
class FusedHit:
    key: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # retriever -> 1-based rank


def rrf(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Fuse ranked id lists (best first). A duplicate id inside one list keeps its best rank."""
    if k < 1:
        raise ValueError("k must be >= 1")
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in rankings.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        seen: set[str] = set()
        for pos, key in enumerate(ids, start=1):
            if key in seen:
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + w / (k + pos)
            ranks.setdefault(key, {})[name] = pos
    ordered = sorted(
        scores,
        key=lambda key: (-scores[key], min(ranks[key].values()), key),
    )
    return [FusedHit(key=key, score=scores[key], ranks=ranks[key]) for key in ordered]
