"""The index version a cache entry belongs to: embedding model + revision + epoch.

Query vectors of another model are not comparable, and results of another index are not
valid; both are in the key, so a model change or an epoch bump (``RAGLINE_CACHE_INDEX_EPOCH``
after a full reindex) orphans every old entry at once (the sweeper removes them by TTL).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["configured_index_version", "index_version"]


def _find_attr(obj: object, attr: str, depth: int = 4) -> str | None:
    """``attr`` of ``obj`` or of the objects it wraps (``_inner``): the query embedders
    are layered (LRU cache -> async adapter -> model)."""
    cur: object | None = obj
    for _ in range(depth):
        if cur is None:
            return None
        try:
            value = getattr(cur, attr, None)
        except Exception:  # a property that needs a loaded model
            value = None
        if isinstance(value, str) and value:
            return value
        cur = getattr(cur, "_inner", None)
    return None


def index_version(embedder: object | None, *, epoch: str = "1") -> str:
    """``<model>@<revision>#<epoch>``; unknown parts say so rather than guess."""
    name = _find_attr(embedder, "name") if embedder is not None else None
    revision = _find_attr(embedder, "revision") if embedder is not None else None
    return f"{name or 'unknown-model'}@{revision or 'unversioned'}#{epoch}"


def configured_index_version(model_path: Path | str | None, *, epoch: str = "1") -> str:
    """The version of the model the query service will load, without loading it: the same
    name and revision rules as ``SentenceTransformerEmbedder`` (``model_path`` None means
    the embedder's configuration, ``RAGLINE_EMBEDDER_MODEL``, else the packaged default)."""
    from ragline.embedding.model import DEFAULT_MODEL_NAME, default_model_path, model_revision
    from ragline.embedding.settings import EmbedderSettings

    location = str(model_path) if model_path is not None else EmbedderSettings().model
    if location is None:
        name, path = DEFAULT_MODEL_NAME, Path(default_model_path())
    else:
        path = Path(location)
        name = path.name if path.is_dir() else location
    revision = model_revision(path) if path.is_dir() else "unversioned"
    if EmbedderSettings().backend == "onnx-int8":  # OnnxEmbedder's revision rule
        from ragline.embedding.onnx_backend import onnx_revision

        revision = onnx_revision(revision, "int8")
    return f"{name}@{revision}#{epoch}"
