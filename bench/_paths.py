"""Where the benchmarks find their data: the shared SciFact copy beside the checkout
(``../shared/eval/scifact``), or ``RAGLINE_SCIFACT_DIR``."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
SCIFACT = Path(os.environ.get("RAGLINE_SCIFACT_DIR", REPO.parent / "shared" / "eval" / "scifact"))
SCIFACT_CORPUS = SCIFACT / "corpus.jsonl"
