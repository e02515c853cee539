"""Settings of the operator console (``RAGLINE_CONSOLE_*``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragline.auth.tokens import ADMIN_ROLE, ROLES_CLAIM

__all__ = ["ConsoleSettings"]


class ConsoleSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_CONSOLE_", extra="ignore", frozen=True)

    admin_role: str = Field(default=ADMIN_ROLE, description="the role a console user needs")
    roles_claim: str = Field(
        default=ROLES_CLAIM, description="JWT claim (dotted path) holding the caller's roles"
    )
    admin_tenants_claim: str = Field(
        default="admin_tenants",
        description="JWT claim listing the tenants an admin administers ('*': all); "
        "without it, the token's own tenant",
    )
    host: str = Field(default="127.0.0.1", description="bind address of `ragline console`")
    port: int = Field(default=8085, ge=1, le=65535)
    secure_cookie: bool = Field(
        default=False, description="mark the session cookie Secure (serve behind TLS)"
    )
