"""Answer cache settings (``RAGLINE_CACHE_*``): kill switch, similarity threshold, TTL,
size bound, freshness policy and the sweeper's cadence."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["CacheSettings", "Freshness"]

# strict: any indexed change a scope can see makes that scope's entries invalid (read
# check + eviction), so new or updated documents show up at once in repeated queries.
# dependents: only entries whose results came from the changed document (plus ACL-affected
# scopes) are evicted; a NEW document reaches a cached query's answer only after the TTL.
Freshness = Literal["strict", "dependents"]


class CacheSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_CACHE_", extra="ignore", frozen=True)

    enabled: bool = Field(default=True, description="kill switch: false -> no cache at all")
    similarity_threshold: float = Field(
        default=0.92,
        ge=0.5,
        le=1.0,
        description="min cosine between normalized query vectors for a semantic hit "
        "(tuned in docs/cache.md)",
    )
    ttl_s: float = Field(default=3600.0, gt=0, description="entry lifetime")
    freshness: Freshness = "strict"
    max_entries_per_tenant: int = Field(default=10_000, ge=1)
    max_entry_bytes: int = Field(
        default=512_000, ge=1024, description="compressed response bigger than this: not cached"
    )
    sweep_interval_s: float = Field(default=30.0, gt=0, description="TTL + size sweep cadence")
    index_epoch: str = Field(
        default="1",
        max_length=64,
        description="part of the index version; bump it to orphan every entry (reindex)",
    )
    lookup_timeout_ms: int = Field(
        default=500, ge=10, description="a slower lookup is abandoned (treated as a miss)"
    )
