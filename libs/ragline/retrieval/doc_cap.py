"""The per-document cap, choosing a document's chunks by their retrievers' own evidence.

``diversity.cap_per_document`` keeps a document's first ``max_per_doc`` chunks in fused
order. Within one document that order is biased: sibling chunks share the document's
vocabulary, so the lexical leg scores most of them, and under score fusion a chunk both
legs find at weak ranks outscores the sibling one leg ranks near the top. Golden
``msh-06`` (tests/golden_marine): the SDK module's chunk that defines the answer is dense
rank 2 and not a BM25 hit; three siblings found by both legs at ranks 3-9 fill the cap of
3 and the answer is dropped (docs/evaluation.md "Fusion").

``cap_per_document_by_evidence`` keeps the document where the plain cap puts it (the
positions of its first ``max_per_doc`` chunks in the given order, so the document ranks
exactly as before) but fills those positions with the document's ``max_per_doc``
strongest chunks by ``strength`` (lower is stronger: a chunk's best rank in any one
retriever, or its rerank position), in the given order among themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

__all__ = ["cap_per_document_by_evidence"]

T = TypeVar("T")


def cap_per_document_by_evidence(
    items: Sequence[T],
    doc_of: Callable[[T], Hashable],
    strength: Callable[[T], float],
    max_per_doc: int,
) -> list[T]:
    if max_per_doc < 1:
        raise ValueError("max_per_doc must be >= 1")
    by_doc: dict[Hashable, list[int]] = {}
    for i, it in enumerate(items):
        by_doc.setdefault(doc_of(it), []).append(i)
    chosen: dict[Hashable, list[int]] = {}
    for d, idx in by_doc.items():
        # strongest first, ties by the given order; then back into the given order
        best = sorted(idx, key=lambda i: (_key(strength(items[i])), i))[:max_per_doc]
        chosen[d] = sorted(best)
    used: dict[Hashable, int] = {}
    out: list[T] = []
    for it in items:
        d = doc_of(it)
        n = used.get(d, 0)
        if n < len(chosen[d]):
            out.append(items[chosen[d][n]])
            used[d] = n + 1
    return out


def _key(v: float) -> float:
    """NaN is weakest (it would otherwise break the sort's total order)."""
    return float("inf") if v != v else v
