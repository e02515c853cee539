"""Embedding spaces, the pure part: what a space is, the text it embeds (its recipe) and
how its vectors derive from the model's output (truncation, normalization).

A space is (model, revision, dimension, normalization, recipe). The model's output for
an exact text is what ``embedding_cache`` holds (keyed by model, revision, sha256 of the
text), so every space of one model shares those cached vectors: a space only chooses
which text it embeds and how it post-processes the vector. Truncating then L2-normalizing
is what sentence-transformers' ``truncate_dim`` does with ``normalize_embeddings=True``;
doing it here lets a truncated space reuse the full-size vectors already cached.
Registry, partitions and the flip: ``ragline.store.spaces``; docs/adr/0012-embedding-spaces.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragline.errors import ConfigError

__all__ = [
    "PRIMARY_SPACE_ID",
    "RECIPES",
    "Recipe",
    "Space",
    "SpaceState",
    "recipe_text",
    "transform",
]

PRIMARY_SPACE_ID = 1  # chunks.embedding (0003), written by the event path
RECIPES: tuple[str, ...] = ("header", "plain")

Recipe = Literal["header", "plain"]
SpaceState = Literal["shadow", "live", "retired"]
Storage = Literal["chunks", "space_vectors"]


@dataclass(frozen=True, kw_only=True)
class Space:
    """One row of ``embedding_spaces``. ``model``/``revision`` None: the embedder's own."""

    space_id: int
    name: str
    model: str | None
    revision: str | None
    dim: int
    truncate_dim: int | None
    normalize: bool
    recipe: Recipe
    storage: Storage
    state: SpaceState
    created_at: datetime | None = None
    promoted_at: datetime | None = None

    @property
    def is_primary(self) -> bool:
        return self.storage == "chunks"

    def model_key(self, default_model: str, default_revision: str) -> tuple[str, str]:
        """(model, revision) of the cache entries this space's vectors derive from."""
        return (self.model or default_model, self.revision or default_revision)

    def same_model(self, model: str, revision: str) -> bool:
        return self.model_key(model, revision) == (model, revision)

    def query_vector(self, full: NDArray[np.float32]) -> NDArray[np.float32]:
        """A query's vector in this space from the model's (full-size) query vector."""
        out: NDArray[np.float32] = transform(
            full[None, :], self.truncate_dim, normalize=self.normalize
        )[0]
        return out


def recipe_text(recipe: str, header: str | None, text: str) -> str:
    """The exact text a space embeds for a child chunk. ``header`` is the event path's
    text (``ragline.embedding.texts.embed_text``): contextual header, newline, text."""
    if recipe == "header":
        h = header.strip() if header else ""
        return f"{h}\n{text}" if h else text
    if recipe == "plain":
        return text
    raise ConfigError(f"unknown recipe {recipe!r} (one of {', '.join(RECIPES)})")


def transform(
    vectors: NDArray[np.float32] | Sequence[NDArray[np.float32]],
    truncate_dim: int | None,
    *,
    normalize: bool = True,
) -> NDArray[np.float32]:
    """Truncate to the first ``truncate_dim`` components, then L2-normalize (rows)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {arr.shape}")
    if truncate_dim is not None:
        if truncate_dim < 1 or truncate_dim > arr.shape[1]:
            raise ConfigError(f"truncate_dim {truncate_dim} outside 1..{arr.shape[1]}")
        arr = arr[:, :truncate_dim]
    if normalize:
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        arr = (arr / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    return np.ascontiguousarray(arr, dtype=np.float32)
