"""The processed-event ledger: a change's identity recorded in the same transaction as
its effect.

The identity is minted by the platform from what the change is (tenant, document, kind,
seq, content/ACL digest: ``indexing.writer.ledger_identity``), stored in the
``event_id`` column; a caller's event id plays no part. A redelivered event (the offset
was not committed before a crash) finds its identity here and re-emits the recorded
outcome instead of writing twice. A lookup only ever matches an entry of the same tenant
and document.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from ragline.store.pg_errors import pg_errors

__all__ = ["record_outcome", "recorded_outcome"]


async def recorded_outcome(
    conn: AsyncConnection, consumer: str, event_id: str, *, tenant_id: str, document_id: str
) -> dict[str, Any] | None:
    with pg_errors():
        cur = await conn.execute(
            "SELECT outcome FROM processed_events WHERE consumer = %s AND event_id = %s"
            " AND tenant_id = %s AND document_id = %s",
            (consumer, event_id, tenant_id, document_id),
        )
        row = await cur.fetchone()
    return None if row is None else dict(row[0])


async def record_outcome(
    conn: AsyncConnection,
    consumer: str,
    event_id: str,
    *,
    tenant_id: str,
    document_id: str,
    source_seq: int,
    outcome: dict[str, Any],
) -> None:
    with pg_errors():
        await conn.execute(
            "INSERT INTO processed_events (consumer, event_id, tenant_id, document_id,"
            " source_seq, outcome) VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (consumer, event_id) DO NOTHING",
            (consumer, event_id, tenant_id, document_id, source_seq, Jsonb(outcome)),
        )
