"""Which model a space needs, and loading it: the embedder's configured model (by
default all-MiniLM-L6-v2 from its package) or a local model directory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ragline.embedding.model import (
    DEFAULT_MODEL_NAME,
    SentenceTransformerEmbedder,
    default_model_path,
    model_revision,
)
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
    """(name, revision) the embedder records with its configuration, without loading."""
    if cfg.model is None:
        return cfg.model_name or DEFAULT_MODEL_NAME, model_revision(Path(default_model_path()))
    return model_identity(cfg.model, cfg.model_name)


def model_identity(location: str, name: str | None = None) -> tuple[str, str]:
    path = Path(location)
    if not path.is_dir():
        raise ConfigError(f"model {location!r} is not a local directory (offline install)")
    return name or path.name, model_revision(path)


def load_space_embedder(space: Space, cfg: EmbedderSettings) -> SentenceTransformerEmbedder:
    """The model ``space`` embeds with (blocking: seconds). Refuses a model whose files
    changed since the space was created (another revision would mix vectors)."""
    name, _ = configured_identity(cfg)
    own = space.model is None or space.model == name
    emb = SentenceTransformerEmbedder(
        cfg.model if own else space.model,
        name=cfg.model_name if own else space.model,
        device=cfg.device,
        batch_size=cfg.batch_size,
        offline=cfg.offline,
        threads=cfg.threads,
    )
    want = space.model_key(emb.name, emb.revision)
    if (emb.name, emb.revision) != want:
        raise ConfigError(
            f"space {space.name!r} was built with {want[0]}@{want[1]}, the model loaded is "
            f"{emb.name}@{emb.revision}"
        )
    return emb


class LazySpaceEmbedder:
    """The space's model, loaded on the first ``encode`` only: a backfill whose vectors
    all derive from stored ones (a truncated space) or come from the cache never pays
    the model load."""

    def __init__(self, space: Space, cfg: EmbedderSettings) -> None:
        self._space = space
        self._cfg = cfg
        self._name, self._revision = space.model_key(*configured_identity(cfg))
        self._inner: SentenceTransformerEmbedder | None = None

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def _model(self) -> SentenceTransformerEmbedder:
        if self._inner is None:
            self._inner = load_space_embedder(self._space, self._cfg)
        return self._inner

    @property
    def name(self) -> str:
        return self._name

    @property
    def revision(self) -> str:
        return self._revision

    @property
    def dim(self) -> int:
        return self._model().dim

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self._model().encode(texts)
