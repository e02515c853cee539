"""Helpers shared by the evaluation unit tests (imported as ``eval_helpers``)."""

from __future__ import annotations

from ragline.evaluation.summary import CaseResult


def case_result(case_id: str, **over: object) -> CaseResult:
    """A stored case result with empty defaults (what a report holds), ``over`` on top."""
    base: dict[str, object] = {
        "mode": "hybrid",
        "category": "c",
        "difficulty": "easy",
        "metrics": {},
        "expect_abstain": False,
        "abstained": False,
        "forbidden_documents": [],
        "unflagged_documents": [],
        "top_documents": [],
        "first_relevant_rank": None,
        "latency_ms": None,
        "server_ms": None,
        "cache": None,
        "rerank_applied": None,
        "trace_id": None,
        "error": None,
    }
    return CaseResult.model_validate({**base, **over, "case_id": case_id})
