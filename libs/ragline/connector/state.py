"""What Postgres holds about documents, as the connector needs it: the stored state of
one document (intake), of every document of one source (sync), and the 'accepted' status.

Reads ``documents`` and ``document_status`` (owned by the store, migration 0003) with the
admin DSN, through the store's pool; psycopg errors leave as ragline errors
(``store.pg_errors``: ``BackendUnavailable`` when Postgres is down, a ``PermanentError``
for one key Postgres refuses).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from ragline.connector.intake import StoredState
from ragline.errors import NotBuiltError, PermanentError, RaglineError
from ragline.store.pg_errors import pg_errors
from ragline.store.pool import open_pool
from ragline.store.status import status_acl_update_sql, status_key_sql

__all__ = ["StateStore"]

_COLUMNS = sql.SQL(
    "d.source_seq, d.acl_seq, d.content_hash, d.meta_hash, d.status, "
    "s.source_seq, s.status, s.content_hash, d.acl_groups, d.classification, "
    "coalesce(s.seq_epoch, 0)"
)

# one round trip for a whole batch of (tenant, document) keys
_GET_MANY = sql.SQL(
    "SELECT k.tenant_id, k.document_id, {cols} "
    "FROM unnest(%s::text[], %s::text[]) AS k(tenant_id, document_id) "
    "LEFT JOIN documents d ON d.tenant_id = k.tenant_id AND d.document_id = k.document_id "
    "LEFT JOIN document_status s "
    "  ON s.tenant_id = k.tenant_id AND s.document_id = k.document_id"
).format(cols=_COLUMNS)

# starts_with() rather than LIKE: source names may contain '_', a LIKE wildcard
_LIST_SOURCE = sql.SQL(
    "WITH d AS (SELECT * FROM documents WHERE tenant_id = %(t)s "
    "           AND starts_with(document_id, %(p)s)), "
    "     s AS (SELECT * FROM document_status WHERE tenant_id = %(t)s "
    "           AND starts_with(document_id, %(p)s)) "
    "SELECT coalesce(d.document_id, s.document_id), {cols} "
    "FROM d FULL OUTER JOIN s ON s.document_id = d.document_id"
).format(cols=_COLUMNS)

# a row is only overwritten by a change whose content key (ragline.order) is >= the
# stored one. The row's ACL (read by the query role, migration 0007) is the one with the
# greatest ACL key (acl_seq, rank: 0 upsert, 1 ACL change) of: the upsert's meta ACL at
# its seq, the documents row's, a parked ACL change's; never older than the stored one.
# A delete brings no ACL and keeps the last known. A version quarantined at intake (the
# fetch) is recorded as 'quarantined' with its reason: it is a content change like any
# other (an older upsert after it is stale, docs/adr/0008).
_ACCEPT = sql.SQL(
    "INSERT INTO document_status AS ds "
    "  (tenant_id, document_id, source_seq, content_hash, stage, status, reason_code, "
    "   reason, acl_groups, acl_seq, acl_rank, updated_at) "
    "SELECT x.t, x.d, x.q, x.h, 'connector', coalesce(x.st, 'accepted'), x.rc, x.rs, "
    "  a.g, a.s, coalesce(a.r, 0), now() "
    "FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::text[], %s::jsonb[], %s::bigint[], "
    "            %s::text[], %s::text[], %s::text[]) "
    "  AS x(t, d, q, h, g, gs, st, rc, rs) "
    "LEFT JOIN documents doc ON doc.tenant_id = x.t AND doc.document_id = x.d "
    "LEFT JOIN pending_acl p ON p.tenant_id = x.t AND p.document_id = x.d "
    "LEFT JOIN LATERAL ("
    "  SELECT c.g, c.s, c.r FROM (VALUES "
    "    (1, CASE WHEN x.g IS NOT NULL "
    "            THEN ARRAY(SELECT jsonb_array_elements_text(x.g)) END, x.gs, 0::smallint), "
    "    (2, doc.acl_groups, doc.acl_seq, doc.acl_rank), "
    "    (3, p.acl_groups, p.acl_seq, 1::smallint)) AS c(i, g, s, r) "
    "  WHERE c.g IS NOT NULL AND c.s IS NOT NULL ORDER BY c.s DESC, c.r DESC, c.i LIMIT 1"
    ") a ON true "
    "ON CONFLICT (tenant_id, document_id) DO UPDATE SET "
    "  source_seq = EXCLUDED.source_seq, content_hash = EXCLUDED.content_hash, "
    "  stage = EXCLUDED.stage, status = EXCLUDED.status, reason_code = EXCLUDED.reason_code, "
    "  reason = EXCLUDED.reason, "
    "  findings = NULL, updated_at = EXCLUDED.updated_at, {acl} "
    "WHERE {old} <= {new} "
    "RETURNING ds.tenant_id, ds.document_id"
).format(
    old=status_key_sql("ds"),
    new=status_key_sql("EXCLUDED"),
    acl=status_acl_update_sql("ds"),
)

# an unchanged restatement at a newer seq (the indexed bytes, metadata and ACL again):
# the status row of the indexed version takes the seq, so an older upsert or delete after
# it is stale (lifetest F13); the documents row keeps the seq its version was indexed at
_RESTATED = sql.SQL(
    "UPDATE document_status AS ds SET source_seq = x.q, updated_at = now() "
    "FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS x(t, d, q) "
    "WHERE ds.tenant_id = x.t AND ds.document_id = x.d AND ds.status = 'indexed' "
    "  AND ds.source_seq < x.q"
)

Key = tuple[str, str]  # (tenant_id, document_id)
Acl = tuple[tuple[str, ...], int]  # (acl_groups, the seq they were stated at)
Reason = tuple[str, str]  # (reason_code, reason) of a version quarantined at intake
_REASON_MAX = 1000  # as the runtime's doc.quarantined


def _state(row: tuple[Any, ...]) -> StoredState | None:
    d_seq, d_acl, d_hash, d_meta, d_status, s_seq, s_status, s_hash, d_groups, d_cls, ep = row
    if d_status is None and s_status is None:
        return None
    return StoredState(
        source_seq=d_seq,
        acl_seq=d_acl,
        content_hash=d_hash,
        meta_hash=d_meta,
        status=d_status,
        pending_seq=s_seq,
        pending_status=s_status,
        pending_hash=s_hash,
        acl_groups=tuple(d_groups) if d_groups is not None else None,
        classification=d_cls,
        seq_epoch=ep,
    )


class StateStore:
    """A small async pool on the admin DSN, opened explicitly (``open``/``close``)."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 4) -> None:
        self._dsn = dsn
        self._sizes = (min_size, max_size)
        self._pool: AsyncConnectionPool | None = None

    async def open(self) -> None:
        min_size, max_size = self._sizes
        self._pool = await open_pool(
            self._dsn, name="connector-state", min_size=min_size, max_size=max_size
        )

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        if self._pool is None:
            raise NotBuiltError("connector state store used before open()")
        # data errors are permanent (one item, not the batch); the rest is transient
        with pg_errors():
            async with self._pool.connection() as conn:
                yield conn

    async def get(self, tenant_id: str, document_id: str) -> StoredState | None:
        return (await self.get_many([(tenant_id, document_id)])).get((tenant_id, document_id))

    async def get_many(self, keys: Iterable[Key]) -> dict[Key, StoredState]:
        """The stored state of every key Postgres knows (unknown keys are absent). A key
        Postgres refuses outright (a PermanentError) is left out, so one bad key never
        hides its batch neighbours; the write of that key fails on its own later."""
        unique = sorted(set(keys))
        if not unique:
            return {}
        try:
            return await self._get_many(unique)
        except PermanentError:
            if len(unique) == 1:
                return {}
        out: dict[Key, StoredState] = {}
        for k in unique:
            try:
                out.update(await self._get_many([k]))
            except PermanentError:
                continue
        return out

    async def _get_many(self, unique: list[Key]) -> dict[Key, StoredState]:
        out: dict[Key, StoredState] = {}
        async with self._conn() as conn:
            cur = await conn.execute(_GET_MANY, ([k[0] for k in unique], [k[1] for k in unique]))
            for row in await cur.fetchall():
                state = _state(row[2:])
                if state is not None:
                    out[(row[0], row[1])] = state
        return out

    async def list_source(self, tenant_id: str, source: str) -> dict[str, StoredState]:
        """Every document of ``<source>:`` in the tenant that Postgres knows about."""
        out: dict[str, StoredState] = {}
        async with self._conn() as conn, conn.cursor() as cur:
            await cur.execute(_LIST_SOURCE, {"t": tenant_id, "p": f"{source}:"})
            async for row in cur:
                state = _state(row[1:])
                if state is not None:
                    out[row[0]] = state
        return out

    async def record_accepted(
        self,
        tenant_id: str,
        document_id: str,
        source_seq: int,
        content_hash: str | None,
        acl: Acl | None = None,
    ) -> bool:
        """Record intake; False if a newer event already moved the status on."""
        key = (tenant_id, document_id)
        written = await self.record_accepted_many(
            {key: (source_seq, content_hash)}, acls={key: acl} if acl is not None else None
        )
        return key in written

    async def record_accepted_many(
        self,
        accepted: Mapping[Key, tuple[int, str | None]],
        *,
        acls: Mapping[Key, Acl] | None = None,
    ) -> set[Key]:
        """One statement for a batch (one entry per key: seq, content hash or None for a
        delete; ``acls``: the source's ACL per key, absent for a delete); the keys actually
        written. Raises the first per-key error (see ``record_accepted_each``)."""
        each = await self.record_accepted_each(accepted, acls=acls)
        for result in each.values():
            if isinstance(result, BaseException):
                raise result
        return {k for k, ok in each.items() if ok is True}

    async def record_restated(self, restated: Mapping[Key, int]) -> None:
        """Move the status row of an indexed document up to the seq an unchanged
        upsert restated it at (never down, never another status)."""
        if not restated:
            return
        keys = sorted(restated)
        params = ([k[0] for k in keys], [k[1] for k in keys], [restated[k] for k in keys])
        async with self._conn() as conn:
            await conn.execute(_RESTATED, params)

    async def record_accepted_each(
        self,
        accepted: Mapping[Key, tuple[int, str | None]],
        *,
        acls: Mapping[Key, Acl] | None = None,
        quarantined: Mapping[Key, Reason] | None = None,
    ) -> dict[Key, bool | RaglineError]:
        """Per key: True written, False a newer change holds the row, or the permanent
        error of that key alone. One statement for the batch; when Postgres refuses it
        for good, one statement per key, so a poison item never fails its neighbours.
        A key in ``quarantined`` is written as 'quarantined' with that reason (its
        content hash may be None: it is still an upsert's key, not a delete's)."""
        if not accepted:
            return {}
        acls, quarantined = acls or {}, quarantined or {}
        try:
            written = await self._accept(accepted, acls, quarantined)
            return {k: k in written for k in accepted}
        except PermanentError as exc:
            if len(accepted) == 1:
                return {k: exc for k in accepted}
        out: dict[Key, bool | RaglineError] = {}
        for k in sorted(accepted):
            one = {k: acls[k]} if k in acls else {}
            why = {k: quarantined[k]} if k in quarantined else {}
            try:
                out[k] = k in await self._accept({k: accepted[k]}, one, why)
            except PermanentError as exc:
                out[k] = exc
        return out

    async def _accept(
        self,
        accepted: Mapping[Key, tuple[int, str | None]],
        acls: Mapping[Key, Acl],
        quarantined: Mapping[Key, Reason],
    ) -> set[Key]:
        keys = sorted(accepted)
        acl = [acls.get(k) for k in keys]
        why = [quarantined.get(k) for k in keys]
        params = (
            [k[0] for k in keys],
            [k[1] for k in keys],
            [accepted[k][0] for k in keys],
            [accepted[k][1] for k in keys],
            [Jsonb(list(a[0])) if a is not None else None for a in acl],
            [a[1] if a is not None else None for a in acl],
            ["quarantined" if w is not None else None for w in why],
            [w[0] if w is not None else None for w in why],
            [w[1][:_REASON_MAX] if w is not None else None for w in why],
        )
        async with self._conn() as conn:
            cur = await conn.execute(_ACCEPT, params)
            return {(r[0], r[1]) for r in await cur.fetchall()}
