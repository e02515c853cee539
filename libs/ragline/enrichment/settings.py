"""Enricher settings (``RAGLINE_ENRICHER_*``). The header budget and the tokenizer come
from the chunker's settings (``RAGLINE_CHUNKER_*``): one truth for both stages."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["EnricherSettings"]


class EnricherSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_ENRICHER_", extra="ignore", frozen=True)

    max_entities_per_type: int = Field(default=20, ge=1, le=200)
    language_sample_chars: int = Field(
        default=20_000, ge=200, description="text read to guess the document's language"
    )
