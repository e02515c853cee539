"""The index version a cache entry belongs to: embedding model + revision + epoch.

Query vectors of another model are not comparable, and results of another index are not
valid; both are in the key, so a model change or an epoch bump (``RAGLINE_CACHE_INDEX_EPOCH``
after a full reindex) orphans every old entry at once (the sweeper removes them by TTL).
"""

from __future__ import annotations

from pathlib import Path

from ragline.config import EmbeddingModelSettings

__all__ = ["configured_index_version"]


def configured_index_version(
    model_path: Path | str | None, model: EmbeddingModelSettings, *, epoch: str = "1"
) -> str:
    """The version of the model the query service will load, without loading it: the same
    name and revision rules as ``SentenceTransformerEmbedder`` (``model_path`` None means
    the shared model settings, ``RAGLINE_EMBEDDER_MODEL``, else the packaged default)."""
    from ragline.embedding.model import DEFAULT_MODEL_NAME
    from ragline.embedding.onnx_backend import configured_revision

    location = str(model_path) if model_path is not None else model.model
    # the backends' revision rule (an ONNX one carries its artifact's checksum)
    _, revision = configured_revision(location, model.backend, model.onnx_dir)
    if location is None:
        name = DEFAULT_MODEL_NAME
    else:
        name = Path(location).name if Path(location).is_dir() else location
    return f"{name}@{revision}#{epoch}"
