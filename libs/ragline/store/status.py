"""The ``document_status`` table: where each document is, written with a seq guard.

A row is only overwritten by a change whose content key (``ragline.order``: seq, then
delete over upsert, then content hash) is >= the stored one, so a late retry of an old
version cannot hide the state of a newer one. The row also carries the
newest ACL its writers knew (``acl_groups``/``acl_seq``, migration 0007): the query role
reads a status through it when the document was never indexed, so the ACL is guarded by
its own seq, like ``documents.acl_seq``, and a write without an ACL keeps the stored one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from psycopg import AsyncConnection, sql
from psycopg.types.json import Jsonb

from ragline.order import ACL_FROM_CHANGE, AclKey, ContentKey, content_key
from ragline.store.pg_errors import pg_errors
from ragline.store.sql_text import rendered

__all__ = [
    "AWAITING_CONTENT_REASON",
    "StatusAcl",
    "StatusRow",
    "StatusValue",
    "mark_awaiting_content",
    "newest_acl",
    "read_status",
    "reassert_status",
    "set_status_acl",
    "status_acl_update_sql",
    "status_key_sql",
    "write_status",
]

StatusValue = Literal["accepted", "indexed", "quarantined", "deleted", "failed", "awaiting_content"]
StatusAcl = tuple[tuple[str, ...], int, int]  # (acl_groups, acl_seq, acl_rank)

AWAITING_CONTENT_REASON = (
    "an ACL change arrived before any content of this document; it is kept and applied "
    "when the content arrives"
)


def status_key_sql(alias: str) -> sql.Composed:
    """The content key (ragline.order) of a ``document_status`` row in SQL: (seq, rank,
    digest); an 'accepted' row without a content hash is an accepted delete."""
    a = sql.SQL(alias)
    deleted = sql.SQL(
        "({a}.status = 'deleted' OR ({a}.status = 'accepted' AND {a}.content_hash IS NULL))"
    ).format(a=a)
    return sql.SQL(
        "({a}.source_seq, CASE WHEN {d} THEN 1 ELSE 0 END,"
        " CASE WHEN {d} THEN '' ELSE coalesce({a}.content_hash, '') END)"
    ).format(a=a, d=deleted)


@dataclass(frozen=True)
class StatusRow:
    """What the guards need of a ``document_status`` row."""

    key: ContentKey  # as ``status_key_sql``
    status: str
    acl: StatusAcl | None  # (acl_groups, acl_seq, acl_rank), None if none is known


async def read_status(conn: AsyncConnection, tenant_id: str, document_id: str) -> StatusRow | None:
    with pg_errors():
        cur = await conn.execute(
            "SELECT source_seq, status, content_hash, acl_groups, acl_seq, acl_rank"
            " FROM document_status WHERE tenant_id = %s AND document_id = %s",
            (tenant_id, document_id),
        )
        row = await cur.fetchone()
    if row is None:
        return None
    seq, status, chash, groups, acl_seq, rank = row
    deleted = status == "deleted" or (status == "accepted" and chash is None)
    acl = (tuple(groups), acl_seq, rank) if groups is not None and acl_seq is not None else None
    return StatusRow(content_key(seq, deleted=deleted, content_hash=chash), status, acl)


def status_acl_update_sql(alias: str) -> sql.Composed:
    """The SET clauses of an upsert into ``document_status`` (stored row ``alias``) that
    keep the ACL with the greater ACL key (ragline.order); no ACL given keeps it."""
    a = sql.SQL(alias)
    newer = sql.SQL(
        "EXCLUDED.acl_seq IS NOT NULL AND "
        "(EXCLUDED.acl_seq, EXCLUDED.acl_rank) >= (coalesce({a}.acl_seq, -1), {a}.acl_rank)"
    ).format(a=a)
    return sql.SQL(", ").join(
        sql.SQL("{c} = CASE WHEN {n} THEN EXCLUDED.{c} ELSE {a}.{c} END").format(
            c=sql.Identifier(c), n=newer, a=a
        )
        for c in ("acl_groups", "acl_rank", "acl_seq")
    )


def newest_acl(*candidates: StatusAcl | None) -> StatusAcl | None:
    """The candidate with the greatest ACL key (the earliest one on a tie); None if none.

    Callers pass the event's own ACL first, then what Postgres already holds (the
    documents row, a pending ACL change), so a newer ACL change is never undone.
    """
    best: StatusAcl | None = None
    for c in candidates:
        if c is not None and (best is None or AclKey(c[1], c[2]) > AclKey(best[1], best[2])):
            best = (tuple(c[0]), c[1], c[2])
    return best


_WRITE = rendered(
    sql.SQL(
        "INSERT INTO document_status AS s (tenant_id, document_id, source_seq,"
        " content_hash, stage, status, reason_code, reason, findings, acl_groups, acl_seq,"
        " acl_rank, updated_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, coalesce(%s, 0), now())"
        " ON CONFLICT (tenant_id, document_id) DO UPDATE SET"
        " source_seq = EXCLUDED.source_seq, content_hash = EXCLUDED.content_hash,"
        " stage = EXCLUDED.stage, status = EXCLUDED.status,"
        " reason_code = EXCLUDED.reason_code, reason = EXCLUDED.reason,"
        " findings = EXCLUDED.findings, updated_at = now(),"
        " {acl} WHERE {old} < {new} OR ({old} = {new}"
        " AND ((s.content_hash, s.stage, s.status, s.reason_code, s.reason, s.findings)"
        " IS DISTINCT FROM (EXCLUDED.content_hash, EXCLUDED.stage, EXCLUDED.status,"
        " EXCLUDED.reason_code, EXCLUDED.reason, EXCLUDED.findings)"
        " OR (EXCLUDED.acl_seq, EXCLUDED.acl_rank) > (coalesce(s.acl_seq, -1), s.acl_rank)))"
        " RETURNING 1"
    ).format(
        old=status_key_sql("s"),
        new=status_key_sql("EXCLUDED"),
        acl=status_acl_update_sql("s"),
    )
)  # composed once, not for every execute (store/sql_text.py)


async def write_status(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    source_seq: int,
    status: StatusValue,
    stage: str,
    content_hash: str | None = None,
    reason_code: str | None = None,
    reason: str | None = None,
    findings: dict[str, Any] | None = None,
    acl: StatusAcl | None = None,
) -> bool:
    """Upsert the status row unless it holds a newer change (content key, ragline.order);
    True when it was written.

    ``acl`` (groups, acl_seq, acl_rank) replaces the stored ACL only if its key is not
    smaller; None keeps the stored one (a delete). An identical rewrite of the same change
    is a no-op (``updated_at`` untouched), so a replay leaves the table as it was.
    """
    groups, acl_seq, rank = (list(acl[0]), acl[1], acl[2]) if acl else (None, None, None)
    with pg_errors():
        cur = await conn.execute(
            _WRITE,
            (
                tenant_id,
                document_id,
                source_seq,
                content_hash,
                stage,
                status,
                reason_code,
                reason,
                Jsonb(findings) if findings is not None else None,
                groups,
                acl_seq,
                rank,
            ),
        )
        return await cur.fetchone() is not None


async def set_status_acl(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    acl_seq: int,
    acl_groups: Sequence[str],
    acl_rank: int = ACL_FROM_CHANGE,
) -> bool:
    """An ACL statement: re-stamp the status row unless it holds an ACL with a greater
    key; True when a row was changed. No row is created (``mark_awaiting_content`` does
    that for a document never seen)."""
    with pg_errors():
        cur = await conn.execute(
            "UPDATE document_status SET acl_groups = %s, acl_seq = %s, acl_rank = %s"
            " WHERE tenant_id = %s AND document_id = %s"
            " AND (acl_seq IS NULL OR (acl_seq, acl_rank) <= (%s, %s))"
            " AND (acl_groups IS DISTINCT FROM %s OR (acl_seq, acl_rank) < (%s, %s))",
            (
                list(acl_groups),
                acl_seq,
                acl_rank,
                tenant_id,
                document_id,
                acl_seq,
                acl_rank,
                list(acl_groups),
                acl_seq,
                acl_rank,
            ),
        )
    return cur.rowcount > 0


async def mark_awaiting_content(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    acl_seq: int,
    acl_groups: Sequence[str],
) -> bool:
    """An ACL change for a document with no status at all: record it as
    'awaiting_content' (visible to the groups it names) instead of leaving no trace."""
    with pg_errors():
        cur = await conn.execute(
            "INSERT INTO document_status (tenant_id, document_id, source_seq, stage, status,"
            " reason_code, reason, acl_groups, acl_seq, acl_rank, updated_at)"
            " VALUES (%s, %s, 0, 'indexer', 'awaiting_content', 'acl_before_content', %s,"
            " %s, %s, %s, now()) ON CONFLICT (tenant_id, document_id) DO NOTHING",
            (
                tenant_id,
                document_id,
                AWAITING_CONTENT_REASON,
                list(acl_groups),
                acl_seq,
                ACL_FROM_CHANGE,
            ),
        )
    return cur.rowcount > 0


async def reassert_status(
    conn: AsyncConnection,
    tenant_id: str,
    document_id: str,
    *,
    source_seq: int,
    content_hash: str | None,
    status: StatusValue,
    stage: str,
) -> bool:
    """Put back the status of the version already applied at ``source_seq`` when intake
    (a replayed ``accepted`` of that very version) overwrote it; a no-op otherwise (an
    accepted *different* change at the same seq is still in flight and may win)."""
    with pg_errors():
        cur = await conn.execute(
            "UPDATE document_status SET status = %s, stage = %s, reason_code = NULL,"
            " reason = NULL, updated_at = now()"
            " WHERE tenant_id = %s AND document_id = %s AND source_seq = %s"
            " AND status = 'accepted' AND content_hash IS NOT DISTINCT FROM %s",
            (status, stage, tenant_id, document_id, source_seq, content_hash),
        )
    return cur.rowcount > 0
