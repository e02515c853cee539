"""What Postgres holds about documents, as the connector needs it: the stored state of
one document (intake), of every document of one source (sync), and the 'accepted' status.

Reads ``documents`` and ``document_status`` (owned by the store, migration 0003) with the
admin DSN, through the store's pool; psycopg errors leave as ragline errors
(``store.pg_errors``: ``BackendUnavailable`` when Postgres is down, a ``PermanentError``
for one key Postgres refuses).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from ragline.connector.intake import Accepted, StatedAcl, StoredState
from ragline.errors import NotBuiltError, PermanentError, RaglineError, TransientError
from ragline.store.pg_errors import pg_errors
from ragline.store.pool import open_pool
from ragline.store.seq_epoch import REFUSED_REASON_CODE
from ragline.store.status import status_acl_update_sql, status_key_sql

__all__ = ["ChangedMeanwhile", "StateStore"]


class ChangedMeanwhile(TransientError):
    """The document changed between a batch's read and its write in a way that changes
    the decision (a ``reset-seq`` started a newer generation, or the other lane's batch
    accepted an ACL statement): nothing was written; the change is decided again (the
    runtime retries it, and the retry reads the new state)."""


_COLUMNS = sql.SQL(
    "d.source_seq, d.acl_seq, d.content_hash, d.meta_hash, d.status, "
    "s.source_seq, s.status, s.content_hash, d.acl_groups, d.classification, "
    "coalesce(s.seq_epoch, 0), s.stated_acl_seq, s.stated_acl_rank, "
    "s.stated_acl_digest, s.accepted_changes"
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

_SOURCE_URIS = sql.SQL(
    "SELECT document_id, uri FROM documents WHERE tenant_id = %(t)s "
    "AND starts_with(document_id, %(p)s)"
)

# the newest ACL statement intake accepted (migration 0130): replaced only by one whose
# ACL key (seq, rank) is not smaller
_NEWER_STATED = sql.SQL(
    "(ds.stated_acl_seq IS NULL OR (ds.stated_acl_seq, ds.stated_acl_rank) <= ({q}, {r}))"
)


# the log of changes intake accepted that the indexer has not applied (migration 0140,
# docs/adr/0008 amendment (3)): ``held`` and ``added`` merged, without duplicates,
# without entries of another generation than ``epoch`` or that the documents row already
# holds (a change at least as new applied: passing it on again would change nothing; for
# an ACL change: a newer version indexed, or a newer full ACL statement, not a narrowing,
# which an older ACL change still narrows, ADR 0007),
# the newest _LOG_MAX by seq; NULL when empty
_LOG_MAX = 64
_LOG_APPLIED = sql.SQL(
    "CASE WHEN u.e->>0 = 'acl' "
    "THEN doc.source_seq > (u.e->>1)::bigint OR ((doc.acl_seq, doc.acl_rank::int) "
    "  >= ((u.e->>1)::bigint, 1) AND NOT (doc.acl_rank = 0 AND doc.acl_seq > doc.source_seq)) "
    "ELSE (doc.source_seq, CASE WHEN doc.status = 'deleted' THEN 1 ELSE 0 END, "
    "      CASE WHEN doc.status = 'deleted' THEN '' ELSE coalesce(doc.content_hash, '') END) "
    "  >= ((u.e->>1)::bigint, CASE WHEN u.e->>0 = 'delete' THEN 1 ELSE 0 END, u.e->>4) END"
)


def _log_merge(held: str, added: str, epoch: str, t: str, d: str) -> sql.Composed:
    return sql.SQL(
        "(SELECT jsonb_agg(k.e ORDER BY (k.e->>1)::bigint, k.e->>2) FROM ("
        "  SELECT u.e FROM (SELECT DISTINCT a.e FROM jsonb_array_elements("
        "    coalesce({held}, '[]'::jsonb) || coalesce({added}, '[]'::jsonb)) AS a(e)) u"
        "  WHERE (u.e->>3)::bigint = {epoch} AND NOT EXISTS (SELECT 1 FROM documents doc"
        "    WHERE doc.tenant_id = {t} AND doc.document_id = {d} AND {applied})"
        "  ORDER BY (u.e->>1)::bigint DESC LIMIT {cap}) k)"
    ).format(
        held=sql.SQL(held),
        added=sql.SQL(added),
        epoch=sql.SQL(epoch),
        t=sql.SQL(t),
        d=sql.SQL(d),
        applied=_LOG_APPLIED,
        cap=sql.Literal(_LOG_MAX),
    )


def _stated_set(q: str, r: str, g: str, cond: sql.Composable) -> sql.Composed:
    """SET clauses writing the statement (q, r, g) when ``cond`` holds, else keeping it."""
    return sql.SQL(", ").join(
        sql.SQL("{c} = CASE WHEN {cond} THEN {v} ELSE ds.{c} END").format(
            c=sql.Identifier(c), cond=cond, v=sql.SQL(v)
        )
        for c, v in (("stated_acl_seq", q), ("stated_acl_rank", r), ("stated_acl_digest", g))
    )


# a row is only overwritten by a change whose content key (ragline.order) is >= the
# stored one, and never by a change stamped with an older reset generation (seq_epoch:
# a reset-seq committed after the batch read it; the change is decided again).
# The row's ACL (read by the query role, migration 0007) is the one with the
# greatest ACL key (acl_seq, rank: 0 upsert, 1 ACL change) of: the upsert's meta ACL at
# its seq, the documents row's, a parked ACL change's; never older than the stored one.
# A delete brings no ACL and keeps the last known. A version quarantined at intake (the
# fetch) is recorded as 'quarantined' with its reason: it is a content change like any
# other (an older upsert after it is stale, docs/adr/0008).
_ACCEPT = sql.SQL(
    "INSERT INTO document_status AS ds "
    "  (tenant_id, document_id, source_seq, content_hash, stage, status, reason_code, "
    "   reason, acl_groups, acl_seq, acl_rank, updated_at, seq_epoch, "
    "   stated_acl_seq, stated_acl_rank, stated_acl_digest, accepted_changes) "
    "SELECT x.t, x.d, x.q, x.h, 'connector', coalesce(x.st, 'accepted'), x.rc, x.rs, "
    "  a.g, a.s, coalesce(a.r, 0), now(), coalesce(x.e, cur.seq_epoch, 0), "
    "  CASE WHEN x.sd IS NOT NULL THEN x.gs END, CASE WHEN x.sd IS NOT NULL THEN 0 END, x.sd, "
    "  x.lg "
    "FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::text[], %s::jsonb[], %s::bigint[], "
    "            %s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[], %s::jsonb[]) "
    "  AS x(t, d, q, h, g, gs, st, rc, rs, sd, e, lg) "
    "LEFT JOIN document_status cur ON cur.tenant_id = x.t AND cur.document_id = x.d "
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
    "  findings = NULL, updated_at = EXCLUDED.updated_at, {acl}, {stated}, "
    "  accepted_changes = {log} "
    "WHERE {old} <= {new} AND ds.seq_epoch <= EXCLUDED.seq_epoch "
    "RETURNING ds.tenant_id, ds.document_id"
).format(
    log=_log_merge(
        "ds.accepted_changes",
        "EXCLUDED.accepted_changes",
        "ds.seq_epoch",
        "ds.tenant_id",
        "ds.document_id",
    ),
    old=status_key_sql("ds"),
    new=status_key_sql("EXCLUDED"),
    acl=status_acl_update_sql("ds"),
    stated=_stated_set(
        "EXCLUDED.stated_acl_seq",
        "EXCLUDED.stated_acl_rank",
        "EXCLUDED.stated_acl_digest",
        sql.SQL("EXCLUDED.stated_acl_seq IS NOT NULL AND {n}").format(
            n=_NEWER_STATED.format(
                q=sql.SQL("EXCLUDED.stated_acl_seq"), r=sql.SQL("EXCLUDED.stated_acl_rank")
            )
        ),
    ),
)

# the keys of a batch whose status row a reset-seq moved to a newer generation than the
# one their changes were stamped with (after the batch read it)
_NEWER_GENERATION = sql.SQL(
    "SELECT ds.tenant_id, ds.document_id FROM document_status ds "
    "JOIN unnest(%s::text[], %s::text[], %s::bigint[]) AS x(t, d, e) "
    "  ON ds.tenant_id = x.t AND ds.document_id = x.d WHERE ds.seq_epoch > x.e"
)

# an ACL change intake forwards (lifetest ACL-1): the status row, if any, records it as
# the newest accepted statement, unless a newer statement is held (an upsert at a newer
# seq accepted or restated meanwhile, perhaps by the other lane's batch: the change is
# stale) or the row is of a newer generation (decided again). Every row of the batch is
# touched and reports both, so a refusal is never mistaken for "no row".
_ACL_OK = sql.SQL("ds.seq_epoch <= x.e AND {n}").format(
    n=_NEWER_STATED.format(q=sql.SQL("x.q"), r=sql.SQL("1"))
)
_ACL_STATED = sql.SQL(
    "UPDATE document_status AS ds SET {stated}, "
    "  accepted_changes = CASE WHEN {ok} THEN {log} ELSE ds.accepted_changes END "
    "FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::text[], %s::bigint[], "
    "            %s::jsonb[]) AS x(t, d, q, g, e, lg) "
    "WHERE ds.tenant_id = x.t AND ds.document_id = x.d "
    "RETURNING ds.tenant_id, ds.document_id, ds.seq_epoch > x.e, "
    "  (ds.stated_acl_seq, ds.stated_acl_rank, ds.stated_acl_digest) "
    "  IS NOT DISTINCT FROM (x.q, 1::smallint, x.g)"
).format(
    stated=_stated_set("x.q", "1", "x.g", _ACL_OK),
    ok=_ACL_OK,
    log=_log_merge("ds.accepted_changes", "x.lg", "ds.seq_epoch", "ds.tenant_id", "ds.document_id"),
)

# an unchanged restatement at a newer seq (the indexed bytes, metadata and ACL again):
# the status row of the indexed version takes the seq, so an older upsert or delete after
# it is stale (lifetest F13); the documents row keeps the seq its version was indexed at
# and its ACL statement (seq, 0) is recorded. Refused (the row reports it, nothing
# changes) when the row is of a newer generation, or holds an older accepted ACL
# statement that differs (an ACL change accepted meanwhile, perhaps by the other lane's
# batch: the upsert then restates an ACL and is decided again; lifetest ACL-1)
_RESTATE_OK = sql.SQL(
    "ds.seq_epoch <= x.e AND NOT (ds.stated_acl_seq IS NOT NULL "
    "  AND (ds.stated_acl_seq, ds.stated_acl_rank) < (x.q, 0) AND ds.stated_acl_digest <> x.g)"
)
# A row a reset-seq marked 'failed' (the change it refused is older than this upsert,
# which restates the indexed version) says 'indexed' again.
_RESTATED = sql.SQL(
    "UPDATE document_status AS ds SET "
    "  source_seq = CASE WHEN {ok} THEN x.q ELSE ds.source_seq END, "
    "  status = CASE WHEN {ok} THEN 'indexed' ELSE ds.status END, "
    "  content_hash = CASE WHEN {ok} THEN doc.content_hash ELSE ds.content_hash END, "
    "  stage = CASE WHEN {ok} AND ds.status = 'failed' THEN 'connector' ELSE ds.stage END, "
    "  reason_code = CASE WHEN {ok} THEN NULL ELSE ds.reason_code END, "
    "  reason = CASE WHEN {ok} THEN NULL ELSE ds.reason END, "
    "  updated_at = CASE WHEN {ok} THEN now() ELSE ds.updated_at END, {stated} "
    "FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::text[], %s::bigint[]) "
    "  AS x(t, d, q, g, e) "
    "JOIN documents doc ON doc.tenant_id = x.t AND doc.document_id = x.d "
    "WHERE ds.tenant_id = x.t AND ds.document_id = x.d AND doc.status = 'indexed' "
    "  AND (ds.status = 'indexed' OR (ds.status = 'failed' AND ds.reason_code = {refused})) "
    "  AND ds.source_seq < x.q "
    "RETURNING ds.tenant_id, ds.document_id, ds.seq_epoch > x.e, ds.source_seq = x.q"
).format(
    refused=sql.Literal(REFUSED_REASON_CODE),
    ok=_RESTATE_OK,
    stated=_stated_set(
        "x.q",
        "0",
        "x.g",
        sql.SQL("{ok} AND {n}").format(
            ok=_RESTATE_OK, n=_NEWER_STATED.format(q=sql.SQL("x.q"), r=sql.SQL("0"))
        ),
    ),
)

Key = tuple[str, str]  # (tenant_id, document_id)
Acl = tuple[tuple[str, ...], int]  # (acl_groups, the seq they were stated at)
Stated = tuple[StatedAcl, int]  # (an ACL statement, the generation it was stamped with)
_NEWER_GEN = "a reset-seq started a newer generation of the document meanwhile"
Reason = tuple[str, str]  # (reason_code, reason) of a version quarantined at intake
Log = Mapping[Key, Sequence[Accepted]]  # the changes accepted per key (migration 0140)
_REASON_MAX = 1000  # as the runtime's doc.quarantined


def _state(row: tuple[Any, ...]) -> StoredState | None:
    d_seq, d_acl, d_hash, d_meta, d_status, s_seq, s_status, s_hash, d_groups, d_cls, ep = row[:11]
    st_seq, st_rank, st_digest, log = row[11:]
    if d_status is None and s_status is None:
        return None
    stated = None
    if st_seq is not None and st_rank is not None and st_digest is not None:
        stated = StatedAcl(st_seq, st_rank, st_digest)
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
        stated_acl=stated,
        accepted=_accepted(log, ep),
    )


def _accepted(log: Any, epoch: int) -> tuple[Accepted, ...]:
    """The entries of the status row's log of this generation (hostile shapes skipped:
    the log only ever makes a change be passed on again, never dropped)."""
    out: list[Accepted] = []
    for e in log if isinstance(log, list) else ():
        if not (isinstance(e, list) and len(e) == 5 and e[3] == epoch):
            continue
        kind, seq, identity, _, chash = e
        if isinstance(seq, int) and all(isinstance(v, str) for v in (kind, identity, chash)):
            out.append(Accepted(kind, seq, identity, chash))
    return tuple(out)


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

    async def source_uris(self, tenant_id: str, source: str) -> dict[str, str | None]:
        """The stored ``uri`` of every ``<source>:`` document that has a documents row
        (where it came from: sync refuses to delete what another folder created)."""
        async with self._conn() as conn, conn.cursor() as cur:
            await cur.execute(_SOURCE_URIS, {"t": tenant_id, "p": f"{source}:"})
            return {doc_id: uri async for doc_id, uri in cur}

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

    async def record_restated(self, restated: Mapping[Key, Stated]) -> dict[Key, RaglineError]:
        """Move the status row of an indexed document up to the seq an unchanged
        upsert restated it at (never down, never another status), recording its ACL
        statement. Returns the keys refused (``ChangedMeanwhile``: nothing written): the
        row is of a newer generation, or an ACL change that differs from the upsert's ACL
        was accepted since the batch read it."""
        if not restated:
            return {}
        async with self._conn() as conn:
            cur = await conn.execute(_RESTATED, _stated_params(restated))
            rows = await cur.fetchall()
        return {
            (t, d): ChangedMeanwhile(
                _NEWER_GEN if newer else "an ACL change was accepted meanwhile"
            )
            for t, d, newer, moved in rows
            if newer or not moved
        }

    async def record_acl_stated(
        self, stated: Mapping[Key, Stated], *, log: Log | None = None
    ) -> dict[Key, bool | RaglineError]:
        """Record ACL changes intake forwards as the newest accepted statement of their
        document's status row (documents without one: nothing to record), and ``log``
        (every ACL change of the batch per key) in the row's log of accepted changes, in
        the same statement. Per key: True (recorded, or no row), False (a newer statement
        is held: the change is stale), or ``ChangedMeanwhile`` (the row is of a newer
        generation than the one stamped)."""
        if not stated:
            return {}
        params = (
            *_stated_params(stated),
            _log_params(sorted(stated), log or {}, {k: e for k, (_, e) in stated.items()}),
        )
        async with self._conn() as conn:
            cur = await conn.execute(_ACL_STATED, params)
            rows = await cur.fetchall()
        out: dict[Key, bool | RaglineError] = dict.fromkeys(stated, True)
        for t, d, newer, written in rows:
            out[(t, d)] = ChangedMeanwhile(_NEWER_GEN) if newer else bool(written)
        return out

    async def record_accepted_each(
        self,
        accepted: Mapping[Key, tuple[int, str | None]],
        *,
        acls: Mapping[Key, Acl] | None = None,
        quarantined: Mapping[Key, Reason] | None = None,
        stated: Mapping[Key, str] | None = None,
        epochs: Mapping[Key, int] | None = None,
        log: Log | None = None,
    ) -> dict[Key, bool | RaglineError]:
        """Per key: True written, False a newer change holds the row, or the error of
        that key alone (permanent: Postgres refuses it; ``ChangedMeanwhile``: a reset-seq
        started a newer generation than ``epochs`` names, decided again). One statement
        for the batch; when Postgres refuses it for good, one statement per key, so a
        poison item never fails its neighbours. A key in ``quarantined`` is written as
        'quarantined' with that reason (its content hash may be None: it is still an
        upsert's key, not a delete's). ``stated``: the digest of the upsert's ACL (at the
        seq in ``acls``), recorded as the newest accepted statement (migration 0130).
        ``epochs``: the generation each key's change was stamped with (absent: the
        current one). ``log``: every change of the batch accepted per key, recorded in
        the row's log when the row is written (migration 0140)."""
        if not accepted:
            return {}
        acls, quarantined = acls or {}, quarantined or {}
        stated, epochs, log = stated or {}, epochs or {}, log or {}
        out: dict[Key, bool | RaglineError] = {}
        try:
            written = await self._accept(accepted, acls, quarantined, stated, epochs, log)
            out = {k: k in written for k in accepted}
        except PermanentError as exc:
            if len(accepted) == 1:
                return {k: exc for k in accepted}
            for k in sorted(accepted):
                try:
                    out[k] = k in await self._accept(
                        {k: accepted[k]},
                        _one(acls, k),
                        _one(quarantined, k),
                        _one(stated, k),
                        _one(epochs, k),
                        _one(log, k),
                    )
                except PermanentError as exc:
                    out[k] = exc
        refused = [k for k, ok in out.items() if ok is False and k in epochs]
        if refused:  # refused by a newer generation, not by a newer change: decide again
            for k in await self._newer_generation({k: epochs[k] for k in refused}):
                out[k] = ChangedMeanwhile(_NEWER_GEN)
        return out

    async def _newer_generation(self, epochs: Mapping[Key, int]) -> set[Key]:
        keys = sorted(epochs)
        params = ([k[0] for k in keys], [k[1] for k in keys], [epochs[k] for k in keys])
        async with self._conn() as conn:
            cur = await conn.execute(_NEWER_GENERATION, params)
            return {(r[0], r[1]) for r in await cur.fetchall()}

    async def _accept(
        self,
        accepted: Mapping[Key, tuple[int, str | None]],
        acls: Mapping[Key, Acl],
        quarantined: Mapping[Key, Reason],
        stated: Mapping[Key, str],
        epochs: Mapping[Key, int],
        log: Log,
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
            [stated.get(k) if acls.get(k) is not None else None for k in keys],
            [epochs.get(k) for k in keys],
            _log_params(keys, log, epochs),
        )
        async with self._conn() as conn:
            cur = await conn.execute(_ACCEPT, params)
            return {(r[0], r[1]) for r in await cur.fetchall()}


def _stated_params(stated: Mapping[Key, Stated]) -> tuple[list[Any], ...]:
    """The unnest() arrays (tenant, document, seq, digest, generation) of statements."""
    keys = sorted(stated)
    return (
        [k[0] for k in keys],
        [k[1] for k in keys],
        [stated[k][0].seq for k in keys],
        [stated[k][0].digest for k in keys],
        [stated[k][1] for k in keys],
    )


def _log_params(keys: Sequence[Key], log: Log, epochs: Mapping[Key, int]) -> list[Jsonb | None]:
    """The jsonb[] of log entries, one per key (NULL: nothing to add); each entry carries
    the generation its change was stamped with."""
    return [
        Jsonb([a.entry(epochs.get(k, 0)) for a in log[k]]) if log.get(k) else None for k in keys
    ]


_V = TypeVar("_V")


def _one(mapping: Mapping[Key, _V], key: Key) -> dict[Key, _V]:
    return {key: mapping[key]} if key in mapping else {}
