"""What one search did on its way to its answer, for the why-not explainer.

``SearchService.search(..., probe=SearchProbe())`` fills it as the search runs; the
explainer (``ragline.ops.explain``) reads it to say where a document fell out, so it
reuses the search instead of re-implementing ranking. Without a probe nothing is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ragline.retrieval.candidates import Candidate
from ragline.retrieval.filters import Predicate
from ragline.retrieval.intent import Intent
from ragline.store.space_model import Space

__all__ = ["SearchProbe"]


@dataclass(kw_only=True)
class SearchProbe:
    intent: Intent | None = None
    space: Space | None = None
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    # per sub-search, in intent order: its query text and compiled predicates
    queries: list[str] = field(default_factory=list)
    preds: list[list[Predicate]] = field(default_factory=list)
    retrieved: list[Candidate] = field(default_factory=list)  # before series resolution
    resolved: list[Candidate] = field(default_factory=list)  # after it (and rerank)
    merged: list[Candidate] = field(default_factory=list)  # all sub-searches, fused
    capped: list[Candidate] = field(default_factory=list)  # after MMR + per-document cap
    deduped: list[Candidate] = field(default_factory=list)  # after parent de-duplication
    final: list[Candidate] = field(default_factory=list)  # the top_k answered
    cap: int = 0
    abstain_reason: str | None = None
