"""Which model a space needs, and loading it: the embedder's configured model and backend
(a space of another model is not supported yet: the query service embeds with that one)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ragline.embedding.model import (
    DEFAULT_MODEL_NAME,
    Embedder,
    EmbedderIdentity,
    load_embedder,
    model_revision,
)
from ragline.embedding.onnx_backend import configured_revision
from ragline.embedding.settings import EmbedderSettings
from ragline.errors import ConfigError
from ragline.store.space_model import Space

__all__ = [
    "LazySpaceEmbedder",
    "configured_identity",
    "load_space_embedder",
    "model_identity",
]


def configured_identity(cfg: EmbedderSettings) -> tuple[str, str]:
    """(name, revision) the embedder records with its configuration, without loading a
    session (an ONNX backend's revision carries its artifact's checksum: built if missing)."""
    if cfg.model is None:
        name = cfg.model_name or DEFAULT_MODEL_NAME
    else:
        name = model_identity(cfg.model, cfg.model_name)[0]
    return name, configured_revision(cfg.model, cfg.backend, cfg.onnx_dir)[1]


def model_identity(location: str, name: str | None = None) -> tuple[str, str]:
    path = Path(location)
    if not path.is_dir():
        raise ConfigError(f"model {location!r} is not a local directory (offline install)")
    return name or path.name, model_revision(path)


def load_space_embedder(space: Space, cfg: EmbedderSettings) -> Embedder:
    """The model ``space`` embeds with (blocking: seconds). Refuses a model whose files
    changed since the space was created (another revision would mix vectors)."""
    emb = load_embedder(cfg)  # the configured backend (torch / onnx / onnx-int8)
    want = space.model_key(emb.name, emb.revision)
    if (emb.name, emb.revision) != want:
        raise ConfigError(
            f"space {space.name!r} was built with {want[0]}@{want[1]}, the model loaded is "
            f"{emb.name}@{emb.revision}"
        )
    return emb


class LazySpaceEmbedder(EmbedderIdentity):
    """The space's model, loaded on the first ``encode`` only: a backfill whose vectors
    all derive from stored ones (a truncated space) or come from the cache never pays
    the model load."""

    def __init__(self, space: Space, cfg: EmbedderSettings) -> None:
        self._space = space
        self._cfg = cfg
        self._name, self._revision = space.model_key(*configured_identity(cfg))
        self._inner: Embedder | None = None

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def _model(self) -> Embedder:
        if self._inner is None:
            self._inner = load_space_embedder(self._space, self._cfg)
        return self._inner

    @property
    def dim(self) -> int:  # the space's model decides (loads it)
        return self._model().dim

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self._model().encode(texts)
