"""Settings of the evaluation harness (env prefix ``RAGLINE_EVAL_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["EvalSettings"]


class EvalSettings(BaseSettings):
    """Where the query service is and how long to wait for the pipeline.

    The JWT secret is the query service's own (``RAGLINE_QUERY_JWT_SECRET``): the harness
    mints tokens for the dataset's acting users exactly as an identity provider would.
    """

    model_config = SettingsConfigDict(
        env_prefix="RAGLINE_EVAL_", extra="ignore", frozen=True, populate_by_name=True
    )

    query_url: str = Field(
        default="http://127.0.0.1:8080",
        validation_alias=AliasChoices("RAGLINE_EVAL_QUERY_URL", "RAGLINE_QUERY_URL"),
        description="base URL of the query service",
    )
    jwt_secret: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("RAGLINE_EVAL_JWT_SECRET", "RAGLINE_QUERY_JWT_SECRET"),
    )
    space: str | None = Field(
        default=None,
        description="embedding space to query (admin only; default the live one, ADR 0013)",
    )
    space_admin_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "RAGLINE_EVAL_SPACE_ADMIN_KEY", "RAGLINE_QUERY_SPACE_ADMIN_KEY"
        ),
        description="the query service's admin credential, needed with `space`",
    )
    jwt_ttl_s: int = Field(default=3600, ge=60)
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    tenant_claim: str = "tenant"
    groups_claim: str = "groups"
    request_timeout_s: float = Field(default=60.0, gt=0)
    request_retries: int = Field(default=3, ge=0, description="retries on 429/503/connect errors")
    concurrency: int = Field(default=2, ge=1, description="queries in flight per mode")
    top_k: int = Field(default=100, ge=1, le=1000)
    warmup_queries: int = Field(
        default=2, ge=1, description="per mode (the first is the preflight), not recorded"
    )
    scifact_dir: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("RAGLINE_EVAL_SCIFACT_DIR", "RAGLINE_SCIFACT_DIR"),
        description="the BEIR SciFact folder (corpus.jsonl, queries.jsonl, qrels/train.tsv); "
        "unset: ~/.cache/ragline/datasets/scifact, then a shared copy beside the checkout "
        "(ragline.evaluation.scifact)",
    )
    ingest_timeout_s: float = Field(default=900.0, gt=0)
    poll_interval_s: float = Field(default=0.5, gt=0)
