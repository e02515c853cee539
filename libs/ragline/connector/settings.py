"""Connector settings (env prefix ``RAGLINE_CONNECTOR_``): fetch limits, allow-lists and
the webhook's credentials.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["ConnectorSettings"]

_MIB = 1024 * 1024


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    return value


class ConnectorSettings(BaseSettings):
    """Lists come from the environment as comma-separated values."""

    model_config = SettingsConfigDict(env_prefix="RAGLINE_CONNECTOR_", extra="ignore", frozen=True)

    max_document_bytes: int = Field(
        default=25 * _MIB, ge=1, description="bigger documents are quarantined (oversize_document)"
    )
    heavy_bytes: int = Field(
        default=1_000_000,
        ge=0,
        description="an upsert whose content is larger travels on in the bulk lane, so a "
        "heavy document never holds up interactive work (docs/adr/0012); 0 = never",
    )
    # docs/lanes.md, "Tenant fairness": one tenant's flood cannot hold up another's edits
    tenant_interactive_rate: float = Field(
        default=2.0,
        ge=0,
        allow_inf_nan=False,
        description="interactive upserts per second each tenant may send (a token bucket "
        "refilled at this rate); more travel on in the bulk lane, never dropped; 0 = off",
    )
    tenant_interactive_burst: int = Field(
        default=20,
        ge=1,
        description="how many interactive upserts a tenant may send at once (the bucket's "
        "size) before the rate applies",
    )
    sync_max_bulk_backlog: int = Field(
        default=500,
        ge=0,
        description="`ragline sync` publishes (bulk) only while the pipeline's bulk backlog "
        "is below this many records, so concurrent backfills of several tenants take "
        "turns; 0 = publish at once",
    )
    sync_max_delete_share: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="`ragline sync` refuses (without --allow-deletes) a plan that deletes "
        "more than this share of the source's live documents",
    )
    allowed_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(), description="file references must resolve under one of these directories"
    )
    allowed_hosts: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="http(s) references may only reach these hosts ('*.example.com' allowed)",
    )
    allow_plain_http: bool = Field(default=False, description="permit http:// besides https://")
    fetch_timeout_s: float = Field(default=20.0, gt=0)
    fetch_max_redirects: int = Field(default=3, ge=0)

    # docs/connector.md, "Sequence rules": one bad event must not pin a document forever
    max_source_seq: int = Field(
        default=2**62,
        ge=0,
        le=2**63 - 1,
        description="a source_seq above this is refused (dead-lettered): leaves headroom "
        "below the bigint limit, above any nanosecond timestamp until the year 2116",
    )
    max_seq_jump: int = Field(
        default=2**56,
        ge=0,
        description="a source_seq more than this above the newest one held for the document "
        "is refused (dead-lettered); 0 disables. Default ~7.2e16: 2.3 years of nanosecond "
        "timestamps; a counter-based source should set it far lower (e.g. 1000000)",
    )

    webhook_enabled: bool = Field(
        default=True, description="serve POST /v1/changes from the connector service"
    )
    webhook_secret: SecretStr | None = Field(
        default=None,
        description="one shared secret (credential 'default', bound to webhook_tenants, any "
        "source); see webhook_credentials for several scoped ones",
    )
    webhook_credentials: SecretStr | None = Field(
        default=None,
        description="JSON list of {id, secret, tenants, document_id_prefixes}: each "
        "credential writes only its tenants and sources (docs/connector.md)",
    )
    webhook_credentials_file: Path | None = Field(
        default=None, description="the same JSON list in a file (a mounted Secret)"
    )
    webhook_replay_window_s: int = Field(
        default=300, ge=1, le=3600, description="Standard Webhooks timestamp tolerance"
    )
    webhook_legacy_signature: bool = Field(
        default=True,
        description="accept the deprecated X-Ragline-Signature (no timestamp: replayable)",
    )
    webhook_max_body_bytes: int = Field(
        default=36 * _MIB, ge=1, description="base64 inflates content by 4/3"
    )
    webhook_tenants: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(), description="tenants the webhook accepts; empty = any"
    )
    webhook_publish_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="how long a webhook request waits for the broker's acknowledgement "
        "before answering 503 (the producer itself would wait request_timeout_ms, 40 s)",
    )
    webhook_retry_after_s: int = Field(
        default=5, ge=1, description="Retry-After of a 503 while the broker is unreachable"
    )
    webhook_allow_file_refs: bool = Field(
        default=False,
        description="accept content_ref kind 'file' from webhook callers (off: only http refs)",
    )

    @field_validator("allowed_roots", "allowed_hosts", "webhook_tenants", mode="before")
    @classmethod
    def _csv(cls, v: object) -> object:
        return _split_csv(v)

    @property
    def webhook_configured(self) -> bool:
        return bool(
            (self.webhook_secret is not None and self.webhook_secret.get_secret_value())
            or self.webhook_credentials is not None
            or self.webhook_credentials_file is not None
        )

    @field_validator("allowed_hosts")
    @classmethod
    def _lower(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(h.lower() for h in v)
