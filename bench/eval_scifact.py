"""SciFact (BEIR, train split) through the real pipeline, every retrieval mode side by side.

``make eval-scifact`` runs this. It starts a private stack and every service (nothing
from ``make up`` is needed or touched), publishes the 5,183 abstracts to
``source.changes``, waits until Postgres shows them indexed, asks the 809 train queries
over HTTP in lexical, dense, hybrid and hybrid+rerank mode, and writes
bench/out/scifact/report.{json,txt,png}. Any extra argument is passed to ``ragline eval``
(for example ``--limit 200`` for a quick look, ``--baseline old/report.json``).

    .venv/bin/python bench/eval_scifact.py [--limit N] [--modes hybrid,dense] [...]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = Path(os.environ.get("RAGLINE_SCIFACT_DIR", ROOT.parent / "shared" / "eval" / "scifact"))


def main(argv: list[str]) -> int:
    from ragline.cli import main as ragline

    if not (SCIFACT / "corpus.jsonl").is_file():
        print(f"SciFact not found at {SCIFACT} (set RAGLINE_SCIFACT_DIR)", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = [
        "eval",
        "--dataset",
        f"beir:{SCIFACT}",
        "--split",
        "train",
        "--tenant",
        "scifact",
        "--groups",
        "eval",
        "--top-k",
        "100",
        "--concurrency",
        "2",
        "--private-stack",
        "--out",
        str(ROOT / "bench" / "out" / "scifact"),
    ]
    return ragline([*args, *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
