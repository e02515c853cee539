"""Settings of the operator tools (``RAGLINE_OPS_*``)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["OpsSettings"]


class OpsSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_OPS_", extra="ignore", frozen=True)

    dlq_group: str = Field(
        default="ragline-dlq-tool",
        description="consumer group of the dlq tool: its committed offsets mark what was "
        "replayed or purged (pipeline stages never read .dlq topics)",
    )
    id_digest_key: SecretStr | None = Field(
        default=None,
        description="key of the digest printed instead of a document id the scanner found "
        "a secret in (`ragline dlq list`); unset: a random key kept in "
        "<state_dir>/ops/id-digest.key",
    )
    dlq_commit_every: int = Field(
        default=100, ge=1, description="records handled between two offset commits"
    )
    dlq_read_timeout_s: float = Field(
        default=30.0, gt=0, description="give up when a partition yields nothing this long"
    )
    topic_replication_factor: int | None = Field(
        default=None,
        ge=1,
        description="replication factor of topics `ragline topics create` makes; "
        "default: min(3, live brokers)",
    )
