"""Where the benchmarks find their data. SciFact: ``RAGLINE_SCIFACT_DIR``, else
~/.cache/ragline/datasets/scifact, else the shared copy beside the checkout
(``../shared/eval/scifact``); ``scifact()`` says where to get it when it is missing."""

from __future__ import annotations

import sys
from pathlib import Path

from ragline.evaluation.scifact import DatasetMissing, scifact_candidates, scifact_dir
from ragline.evaluation.settings import EvalSettings

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"


def _located() -> Path:
    try:
        return scifact_dir(EvalSettings(), repo=REPO)
    except DatasetMissing:
        return scifact_candidates(EvalSettings(), repo=REPO)[0]


# where SciFact is (or would be looked for first): import-time safe, so --help works
SCIFACT = _located()
SCIFACT_CORPUS = SCIFACT / "corpus.jsonl"


def scifact() -> Path:
    """SciFact's folder; exits 2 with where to get the public archive when it is missing
    (call it in ``main`` after parsing arguments, so ``--help`` never needs the data)."""
    try:
        return scifact_dir(EvalSettings(), repo=REPO)
    except DatasetMissing as exc:
        print(f"{Path(sys.argv[0]).name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
