"""Where the public BEIR SciFact dataset is, or a clear error saying how to get it.

The benchmarks and ``make eval-scifact`` read SciFact (5,183 abstracts, the train
queries and judgements). It is not in the repository (CC BY 4.0 / ODC-By, ~3 MB
zipped): an install that lacks it gets the archive's address and the folder to put it
in, not a ``FileNotFoundError``.
"""

from __future__ import annotations

from pathlib import Path

from ragline.errors import ConfigError
from ragline.evaluation.settings import EvalSettings

__all__ = ["SCIFACT_ARCHIVE_URL", "DatasetMissing", "scifact_candidates", "scifact_dir"]

SCIFACT_ARCHIVE_URL = (
    "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
)
DEFAULT_DIR = Path("~/.cache/ragline/datasets/scifact")
_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv")


class DatasetMissing(ConfigError):
    """An evaluation dataset is not where the settings say."""


def scifact_candidates(settings: EvalSettings, *, repo: Path | None = None) -> list[Path]:
    """The folders looked in, in order: the setting alone when set; else the user cache,
    then ``shared/eval/scifact`` beside the checkout ``repo`` (the developers' layout)."""
    if settings.scifact_dir is not None:
        return [settings.scifact_dir.expanduser()]
    out = [DEFAULT_DIR.expanduser()]
    if repo is not None:
        out.append(repo.parent / "shared" / "eval" / "scifact")
    return out


def scifact_dir(settings: EvalSettings, *, repo: Path | None = None) -> Path:
    """The first candidate holding SciFact's files; ``DatasetMissing`` says how to get it."""
    candidates = scifact_candidates(settings, repo=repo)
    for folder in candidates:
        if all((folder / f).is_file() for f in _FILES):
            return folder
    looked = ", ".join(str(c) for c in candidates)
    raise DatasetMissing(
        f"BEIR SciFact not found (looked in {looked}; each needs {', '.join(_FILES)}). "
        f"It is public: download {SCIFACT_ARCHIVE_URL}, then `unzip scifact.zip -d "
        f"{DEFAULT_DIR.parent}` (it unpacks to {DEFAULT_DIR}, the default), or unzip it "
        "anywhere and set RAGLINE_SCIFACT_DIR to the folder holding corpus.jsonl"
    )
