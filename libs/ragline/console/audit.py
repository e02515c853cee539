"""The console's audit trail (``console_audit``, migration 0165): one row per mutating
action, written before the action's answer is sent; refusals are written too."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ragline.store.pg_errors import pg_errors

__all__ = ["AuditEntry", "recent_actions", "record_action"]


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    at: datetime
    actor: str
    action: str
    tenant_id: str | None
    target: dict[str, Any]
    outcome: str
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "actor": self.actor,
            "action": self.action,
            "tenant_id": self.tenant_id,
            "target": self.target,
            "outcome": self.outcome,
            "detail": self.detail,
        }


async def record_action(
    conn: AsyncConnection,
    *,
    actor: str,
    action: str,
    tenant_id: str | None,
    target: dict[str, Any],
    outcome: str,
    detail: dict[str, Any] | None = None,
) -> None:
    with pg_errors():
        await conn.execute(
            "INSERT INTO console_audit (actor, action, tenant_id, target, outcome, detail)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (actor, action, tenant_id, Jsonb(target), outcome, Jsonb(detail or {})),
        )


async def recent_actions(
    conn: AsyncConnection, *, tenants: frozenset[str] | None = None, limit: int = 50
) -> list[AuditEntry]:
    """Newest first; ``tenants``: only actions on these tenants (None: every action,
    tenant-less ones such as space flips included)."""
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            "SELECT at, actor, action, tenant_id, target, outcome, detail FROM console_audit"
            " WHERE %(all)s OR tenant_id = ANY(%(t)s::text[])"
            " ORDER BY audit_id DESC LIMIT %(n)s",
            {"all": tenants is None, "t": sorted(tenants or ()), "n": limit},
        )
        return [AuditEntry(**r) for r in await cur.fetchall()]
