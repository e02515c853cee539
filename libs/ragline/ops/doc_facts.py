"""What the stores say about a document, for operators: its row, its pipeline status
and its timeline (admin DSN; never chunk text, never finding values).

Shared by ``ragline documents list|show|explain`` and the console's documents and
why-not pages, so the CLI and the console cannot disagree about a document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime
from typing import Any, Literal

from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row

from ragline.store.pg_errors import pg_errors

__all__ = [
    "DocumentFacts",
    "TimelineEntry",
    "child_chunk_ids",
    "document_of_chunk",
    "list_documents",
    "read_facts",
    "tenants_holding",
    "timeline",
]

ListFilter = Literal[
    "all", "indexed", "deleted", "quarantined", "in_flight", "failed", "no_readers"
]

_FACTS = sql.SQL(
    "SELECT coalesce(d.tenant_id, s.tenant_id) AS tenant_id,"
    " coalesce(d.document_id, s.document_id) AS document_id,"
    " d.status AS status, s.status AS pipeline_status, s.stage, s.reason_code, s.reason,"
    " coalesce(d.source_seq, s.source_seq) AS source_seq, d.generation, d.revision,"
    " d.os_revision, d.content_hash, s.content_hash AS pipeline_content_hash,"
    " coalesce(d.acl_groups, s.acl_groups, '{{}}') AS acl_groups, d.classification,"
    " d.title, d.uri, d.source_type, d.version, d.series_id, d.superseded, d.superseded_by,"
    " d.effective_date, d.expiry_date, d.chunk_count, d.created_at, d.indexed_at,"
    " d.deleted_at, coalesce(s.updated_at, d.updated_at) AS updated_at,"
    " coalesce(s.findings, d.findings) AS findings"
    " FROM documents d FULL JOIN document_status s"
    " ON s.tenant_id = d.tenant_id AND s.document_id = d.document_id"
    " WHERE {where}"
)


@dataclass(frozen=True, kw_only=True)
class DocumentFacts:
    """One document as the stores hold it. ``status``: the searchable row ('indexed' or
    'deleted', None when it was never indexed); ``pipeline_status``: where its newest
    change is ('accepted', 'indexed', 'quarantined', 'deleted', 'failed', ...)."""

    tenant_id: str
    document_id: str
    status: str | None
    pipeline_status: str | None
    stage: str | None
    reason_code: str | None
    reason: str | None
    source_seq: int | None
    generation: int | None
    revision: int | None
    os_revision: int | None
    content_hash: str | None
    pipeline_content_hash: str | None
    acl_groups: tuple[str, ...]
    classification: str | None
    title: str | None
    uri: str | None
    source_type: str | None
    version: str | None
    series_id: str | None
    superseded: bool | None
    superseded_by: str | None
    effective_date: date | None
    expiry_date: date | None
    chunk_count: int | None
    created_at: datetime | None
    indexed_at: datetime | None
    deleted_at: datetime | None
    updated_at: datetime | None
    findings: dict[str, Any] | None

    @property
    def state(self) -> str:
        """One word for lists: the pipeline's newest word unless the row says more."""
        if self.status == "deleted" or self.pipeline_status == "deleted":
            return "deleted"
        if self.pipeline_status in ("quarantined", "failed", "accepted", "awaiting_content"):
            return str(self.pipeline_status)
        if self.status == "indexed" and not self.acl_groups:
            return "no_readers"
        return self.status or self.pipeline_status or "unknown"

    def readable_by(self, groups: Sequence[str]) -> bool:
        return bool(set(self.acl_groups) & set(groups))

    def to_json(self, *, with_descriptive: bool = True) -> dict[str, Any]:
        """``with_descriptive=False`` drops title, uri and series (what a document is
        about) and keeps ids, states, hashes and the ACL: for explanations given about a
        principal who may not read the document."""
        out = asdict(self)
        out["state"] = self.state
        out["acl_groups"] = list(self.acl_groups)
        for k in ("effective_date", "expiry_date", "created_at", "indexed_at", "deleted_at"):
            out[k] = out[k].isoformat() if out[k] is not None else None
        out["updated_at"] = self.updated_at.isoformat() if self.updated_at else None
        if not with_descriptive:
            for k in ("title", "uri", "series_id", "version", "findings"):
                out[k] = None
        return out


def _facts(row: dict[str, Any]) -> DocumentFacts:
    row["acl_groups"] = tuple(row["acl_groups"] or ())
    f = row.get("findings")
    # counts and policy only: the stored summary never holds values, and positions of
    # findings say nothing an operator needs here
    row["findings"] = (
        {k: f[k] for k in ("counts", "policy") if k in f} if isinstance(f, dict) else None
    )
    return DocumentFacts(**row)


async def read_facts(
    conn: AsyncConnection, tenant_id: str, document_id: str
) -> DocumentFacts | None:
    where = sql.SQL(
        "coalesce(d.tenant_id, s.tenant_id) = %(t)s"
        " AND coalesce(d.document_id, s.document_id) = %(d)s"
    )
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(_FACTS.format(where=where), {"t": tenant_id, "d": document_id})
        row = await cur.fetchone()
    return _facts(row) if row is not None else None


_LIST_WHERE: dict[str, str] = {
    "all": "true",
    "indexed": "d.status = 'indexed' AND coalesce(s.status, 'indexed') = 'indexed'",
    "deleted": "(d.status = 'deleted' OR s.status = 'deleted')",
    "quarantined": "s.status = 'quarantined'",
    "in_flight": "s.status IN ('accepted', 'awaiting_content')",
    "failed": "s.status = 'failed'",
    "no_readers": "d.status = 'indexed' AND cardinality(d.acl_groups) = 0",
}


async def list_documents(
    conn: AsyncConnection,
    tenant_id: str,
    *,
    state: ListFilter = "all",
    prefix: str | None = None,
    limit: int = 100,
) -> list[DocumentFacts]:
    """A tenant's documents, newest change first; ``prefix``: of the document id (a
    source's documents are ``<source>:...``)."""
    where = sql.SQL("coalesce(d.tenant_id, s.tenant_id) = %(t)s AND ({}) AND ({})").format(
        sql.SQL(_LIST_WHERE[state]),  # fixed literals above
        sql.SQL("coalesce(d.document_id, s.document_id) LIKE %(p)s ESCAPE '\\'"),
    )
    like = (prefix or "").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    query = sql.Composed(
        [
            _FACTS.format(where=where),
            sql.SQL(" ORDER BY coalesce(s.updated_at, d.updated_at) DESC, 2 LIMIT %(n)s"),
        ]
    )
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(query, {"t": tenant_id, "p": like, "n": limit})
        rows = await cur.fetchall()
    return [_facts(r) for r in rows]


async def tenants_holding(conn: AsyncConnection, document_id: str) -> list[str]:
    """Every tenant with a row (document or status) for this id."""
    with pg_errors():
        cur = await conn.execute(
            "SELECT tenant_id FROM documents WHERE document_id = %(d)s"
            " UNION SELECT tenant_id FROM document_status WHERE document_id = %(d)s"
            " ORDER BY 1",
            {"d": document_id},
        )
        return [str(r[0]) for r in await cur.fetchall()]


async def child_chunk_ids(conn: AsyncConnection, tenant_id: str, document_id: str) -> list[str]:
    with pg_errors():
        cur = await conn.execute(
            "SELECT chunk_id FROM chunks WHERE tenant_id = %s AND document_id = %s"
            " AND level = 'child' ORDER BY ordinal",
            (tenant_id, document_id),
        )
        return [str(r[0]) for r in await cur.fetchall()]


async def document_of_chunk(conn: AsyncConnection, tenant_id: str, chunk_id: str) -> str | None:
    with pg_errors():
        cur = await conn.execute(
            "SELECT document_id FROM chunks WHERE tenant_id = %s AND chunk_id = %s",
            (tenant_id, chunk_id),
        )
        row = await cur.fetchone()
    return str(row[0]) if row else None


@dataclass(frozen=True, kw_only=True)
class TimelineEntry:
    at: datetime
    source: str  # which store said it: indexer ledger, status, documents, seq_resets
    what: str
    seq: int | None = None
    detail: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "source": self.source,
            "what": self.what,
            "seq": self.seq,
            "detail": self.detail,
        }


_OUTCOME_KEYS = ("action", "generation", "chunk_count", "skipped", "acl_groups_after")


async def timeline(
    conn: AsyncConnection, tenant_id: str, document_id: str, *, limit: int = 100
) -> list[TimelineEntry]:
    """The document's history as the stores remember it, oldest first: every event the
    indexer applied (its ledger, with the outcome it emitted), operator sequence resets,
    the row's creation/indexing/deletion and the pipeline status's last word. The
    ledger is pruned by retention, so older history may be gone."""
    out: list[TimelineEntry] = []
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            "SELECT processed_at, consumer, source_seq, outcome FROM processed_events"
            " WHERE tenant_id = %s AND document_id = %s ORDER BY processed_at DESC LIMIT %s",
            (tenant_id, document_id, limit),
        )
        for r in await cur.fetchall():
            o = r["outcome"] if isinstance(r["outcome"], dict) else {}
            out.append(
                TimelineEntry(
                    at=r["processed_at"],
                    source=f"ledger:{r['consumer']}",
                    what=str(o.get("action") or "applied")
                    + (" (skipped)" if o.get("skipped") else ""),
                    seq=r["source_seq"],
                    detail={k: o[k] for k in _OUTCOME_KEYS if k in o} or None,
                )
            )
        await cur.execute(
            "SELECT reset_at, old_source_seq, new_seq, actor, reason FROM seq_resets"
            " WHERE tenant_id = %s AND document_id = %s",
            (tenant_id, document_id),
        )
        for r in await cur.fetchall():
            out.append(
                TimelineEntry(
                    at=r["reset_at"],
                    source="seq_resets",
                    what="sequence reset",
                    seq=r["new_seq"],
                    detail={"from": r["old_source_seq"], "actor": r["actor"], "why": r["reason"]},
                )
            )
    facts = await read_facts(conn, tenant_id, document_id)
    if facts is not None:
        for at, what in (
            (facts.created_at, "first indexed row"),
            (facts.indexed_at, f"generation {facts.generation} indexed"),
            (facts.deleted_at, "deleted (tombstone)"),
        ):
            if at is not None:
                out.append(TimelineEntry(at=at, source="documents", what=what))
        if facts.updated_at is not None and facts.pipeline_status is not None:
            detail = {
                "stage": facts.stage,
                "reason_code": facts.reason_code,
                "reason": facts.reason,
                "content_hash": facts.pipeline_content_hash,
            }
            out.append(
                TimelineEntry(
                    at=facts.updated_at,
                    source="document_status",
                    what=f"status {facts.pipeline_status}",
                    seq=facts.source_seq,
                    detail={k: v for k, v in detail.items() if v is not None} or None,
                )
            )
    out.sort(key=lambda e: e.at)
    return out
