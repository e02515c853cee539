"""Indexer settings (``RAGLINE_INDEXER_*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["IndexerSettings"]


class IndexerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_INDEXER_", extra="ignore", frozen=True)

    consumer: str = Field(
        default="indexer", description="ledger name: one per logical indexer deployment"
    )
    os_refresh: Literal["true", "false", "wait_for"] = Field(
        default="wait_for",
        description="refresh policy of the OpenSearch writes of one batch: 'wait_for' makes "
        "doc.indexed mean searchable (one refresh per batch, not per document)",
    )
    os_timeout_s: float = Field(default=30.0, gt=0)
    os_outage_wait_s: float = Field(
        default=180.0,
        ge=0,
        description="how long a batch waits (retrying with backoff) for an OpenSearch that "
        "cannot be reached or throttles, before its events fail to the runtime's retries",
    )
    os_retry_backoff_s: float = Field(default=0.5, gt=0, description="first wait; doubles")
    os_retry_backoff_max_s: float = Field(default=10.0, gt=0)
    os_bulk_size: int = Field(default=500, ge=1)
    pool_min: int = Field(default=1, ge=1)
    pool_max: int = Field(default=4, ge=1)
