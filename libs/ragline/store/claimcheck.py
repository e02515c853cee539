"""Claim check: big message bodies go to Postgres by content hash, Kafka carries the key.

Real Kafka refuses messages over ``message.max.bytes`` (1 MB by default); a document of a
few MB with its blocks, or a few hundred chunks with vectors, is over that. The body is
stored once per content hash, so redelivery and replay never duplicate it.

Every body is stored with its owner (``tenant_id``, ``document_id``: read from the event
JSON), because bodies of ``source.changes``, ``doc.fetched`` and ``doc.parsed`` are raw,
unscanned text: deleting a document (the indexer applying a delete) and blocking one (the
scanner) purge every stored body of it (``purge_document``), instead of leaving it for
``ragline gc`` to expire (docs/scanning.md, "Where raw text lives").
"""

from __future__ import annotations

import asyncio
import json
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from ragline.errors import PermanentError
from ragline.events import unstorable
from ragline.hashing import sha256_hex
from ragline.store.pg_errors import pg_errors
from ragline.store.pool import open_pool

__all__ = ["CLAIM_HEADER", "ClaimCheckStore", "body_owner", "purge_document_bodies"]

CLAIM_HEADER = "ragline-claim-check"
# a claim check is read or written while a message waits: fail fast when Postgres is down
# (the caller retries with backoff)
_CONNECT_TIMEOUT_S = 5.0


def body_owner(body: bytes) -> tuple[str | None, str | None]:
    """``(tenant_id, document_id)`` of an event or dead-letter body; ``(None, None)`` when
    the body is not a JSON object naming them."""
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None, None
    if not isinstance(obj, dict):
        return None, None
    tenant, doc = obj.get("tenant_id"), obj.get("document_id")
    # a poison body (a NUL or a lone surrogate in its ids, issue 12) has no storable
    # owner: its dead letter must still be written
    return (
        tenant if isinstance(tenant, str) and unstorable(tenant) is None else None,
        doc if isinstance(doc, str) and unstorable(doc) is None else None,
    )


_PURGE = (
    "DELETE FROM claim_checks WHERE tenant_id = %s AND document_id = %s"
    " AND (%s::timestamptz IS NULL OR created_at <= %s::timestamptz)"
)


async def purge_document_bodies(
    conn: psycopg.AsyncConnection[Any],
    tenant_id: str,
    document_id: str,
    *,
    stored_before: datetime | None = None,
) -> int:
    """Delete every stored body of the document (on a connection that may write
    ``claim_checks``: the admin role); ``stored_before`` spares bodies of a later version
    stored after the delete was issued. Returns the number of bodies removed."""
    cur = await conn.execute(_PURGE, (tenant_id, document_id, stored_before, stored_before))
    return cur.rowcount


class ClaimCheckStore:
    """Lazily connected: a small pool (``store.pool``) opened on first use, so a process
    that never sees a big message never connects. Postgres errors leave as ragline
    errors (``store.pg_errors``)."""

    def __init__(
        self, dsn: str, *, name: str = "claim-check", connect_timeout_s: float = _CONNECT_TIMEOUT_S
    ) -> None:
        self._dsn = dsn
        self._name = name
        self._connect_timeout_s = connect_timeout_s
        self._pool: AsyncConnectionPool | None = None
        self._opening = asyncio.Lock()

    async def _connection(self) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        async with self._opening:
            if self._pool is None:
                self._pool = await open_pool(
                    self._dsn, name=self._name, max_size=2, timeout_s=self._connect_timeout_s
                )
        return self._pool.connection()

    async def put(self, body: bytes) -> str:
        key = sha256_hex(body)
        tenant, doc = body_owner(body)
        with pg_errors():
            async with await self._connection() as conn:
                await conn.execute(
                    # a re-put (the same body published again) refreshes created_at, so
                    # `ragline gc` counts a row's age from its newest reference (stale by at
                    # most an hour: most re-puts then write nothing)
                    "INSERT INTO claim_checks (key, body, size_bytes, tenant_id, document_id)"
                    " VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET created_at = now()"
                    " WHERE claim_checks.created_at < now() - interval '1 hour'",
                    (key, body, len(body), tenant, doc),
                )
        return key

    async def touch(self, key: str) -> bool:
        """Restart the retention clock of a body that is referenced again (a replayed or
        requeued stub); False when it is gone (swept by ``ragline gc``)."""
        with pg_errors():
            async with await self._connection() as conn:
                cur = await conn.execute(
                    "UPDATE claim_checks SET created_at = now() WHERE key = %s", (key,)
                )
        return cur.rowcount > 0

    async def get(self, key: str) -> bytes:
        with pg_errors():
            async with await self._connection() as conn:
                cur = await conn.execute("SELECT body FROM claim_checks WHERE key = %s", (key,))
                row = await cur.fetchone()
        if row is None:
            raise PermanentError(f"claim check {key[:12]}… not found")
        body = bytes(row[0])
        if sha256_hex(body) != key:
            raise PermanentError(f"claim check {key[:12]}… is corrupt")
        return body

    async def purge_document(self, tenant_id: str, document_id: str) -> int:
        """``purge_document_bodies`` on this store's own pool."""
        with pg_errors():
            async with await self._connection() as conn:
                return await purge_document_bodies(conn, tenant_id, document_id)

    @staticmethod
    def stub(key: str) -> bytes:
        return json.dumps({"claim_check": key}).encode()

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
