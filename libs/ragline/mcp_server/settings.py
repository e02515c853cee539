"""Settings of ``ragline mcp`` (``RAGLINE_MCP_*``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["McpSettings"]


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="RAGLINE_MCP_", extra="ignore", frozen=True, populate_by_name=True
    )

    query_url: str = Field(
        default="http://127.0.0.1:8080",
        validation_alias=AliasChoices("RAGLINE_MCP_QUERY_URL", "RAGLINE_QUERY_URL"),
        description="base URL of the query service the tools call",
    )
    token: SecretStr | None = Field(
        default=None, description="stdio: the caller's bearer token for the query service"
    )
    token_file: Path | None = Field(
        default=None,
        description="stdio: a file holding the caller's token, re-read when it nears expiry "
        "(a sidecar keeps it fresh)",
    )
    call_budget: int = Field(
        default=50,
        ge=1,
        description="tool calls per session (stdio: the process; HTTP: the MCP session, else "
        "the caller's token)",
    )
    max_top_k: int = Field(default=10, ge=1, le=50, description="evidence items per search")
    max_item_chars: int = Field(default=2000, ge=100, description="text kept per evidence item")
    max_response_chars: int = Field(
        default=16000, ge=1000, description="evidence text per tool answer, all items together"
    )
    request_timeout_s: float = Field(default=30.0, gt=0)
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    path: str = "/mcp"
    public_url: str | None = Field(
        default=None, description="the MCP endpoint as clients reach it (OAuth resource id)"
    )
    authorization_server_url: str | None = Field(
        default=None,
        description="where callers get tokens (advertised in the protected-resource metadata)",
    )
    max_sessions_tracked: int = Field(default=10_000, ge=10)

    def resource_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}{self.path}"
