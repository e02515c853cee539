"""OpenTelemetry tracing settings (``RAGLINE_TRACING_*``); the tracing itself is
``ragline.tracing``."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["TracingSettings"]


class TracingSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_TRACING_", extra="ignore", frozen=True)

    enabled: bool = Field(default=False, description="emit OpenTelemetry spans")
    otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP traces URL, e.g. http://otel-collector:4318/v1/traces; "
        "default: the OTEL_EXPORTER_OTLP_* variables of the SDK",
    )
    sample_ratio: float = Field(
        default=1.0, ge=0.0, le=1.0, description="share of new traces recorded (parent-based)"
    )
