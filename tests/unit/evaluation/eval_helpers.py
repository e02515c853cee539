"""Helpers shared by the evaluation unit tests (imported as ``eval_helpers``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ragline.evaluation.summary import CaseResult

BENCH = Path(__file__).resolve().parents[3] / "bench"


def bench_module(name: str) -> ModuleType:
    """``bench/<name>.py`` imported (the scripts are not a package; their own imports of
    ``_paths`` and friends resolve from bench/ while it loads)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH))
    return mod


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
