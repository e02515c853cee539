"""Where the benchmarks find their data. SciFact: ``RAGLINE_SCIFACT_DIR``, else
~/.cache/ragline/datasets/scifact, else the shared copy beside the checkout
(``../shared/eval/scifact``); ``scifact()`` says where to get it when it is missing."""

from __future__ import annotations

import argparse
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


# exit code of a ``--quick`` run that lacks an optional input (SciFact): ``run_all.py``
# reports the benchmark as skipped, not failed
SKIPPED = 75


def add_quick(ap: argparse.ArgumentParser) -> None:
    """The ``--quick`` flag every benchmark ``run_all.py`` runs declares: a smoke run on
    tiny inputs (seconds, not minutes) that proves the script still works
    (``make bench BENCH_ARGS=--quick``, run by ``.ci/run``)."""
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run on tiny inputs (make bench BENCH_ARGS=--quick; CI runs it)",
    )


def scifact(*, quick: bool = False) -> Path:
    """SciFact's folder; exits 2 with where to get the public archive when it is missing
    (call it in ``main`` after parsing arguments, so ``--help`` never needs the data).
    ``quick``: a missing dataset is a skip (exit ``SKIPPED``), not a failure."""
    try:
        return scifact_dir(EvalSettings(), repo=REPO)
    except DatasetMissing as exc:
        if quick:
            print(f"{Path(sys.argv[0]).name}: skipped (--quick): {exc}", flush=True)
            raise SystemExit(SKIPPED) from None
        print(f"{Path(sys.argv[0]).name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
