"""Re-read candidate chunks from Postgres under RLS: the only source of returned text.

Whatever a retriever proposed (an OpenSearch hit with a stale ACL, a chunk of a document
deleted a moment ago), only rows the principal can see NOW, of an indexed document's
current generation, matching the same filters, come back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row

from ragline.auth.principal import Principal
from ragline.retrieval.filters import Predicate, to_sql
from ragline.retrieval.spaces import vector_sql
from ragline.store.pg_errors import pg_errors
from ragline.store.space_model import Space
from ragline.text.titles import title_from_uri

__all__ = ["ChunkRow", "citation_title", "hydrate"]


@dataclass(frozen=True, kw_only=True)
class ChunkRow:
    chunk_id: str
    document_id: str
    parent_id: str | None
    text: str
    section_path: tuple[str, ...]
    content_type: str
    page_start: int | None
    page_end: int | None
    line_start: int | None
    line_end: int | None
    injection_suspect: bool
    pii_types: tuple[str, ...]
    trust: str | None
    version: str | None
    series_id: str | None
    effective_date: date | None
    title: str | None
    uri: str | None
    similarity: float | None  # cosine similarity to the query vector, when one was given
    embedding: npt.NDArray[np.float32] | None


_COLUMNS = sql.SQL(
    "c.chunk_id, c.document_id, c.parent_id, c.text, c.section_path, c.content_type,"
    " c.page_start, c.page_end, c.line_start, c.line_end, c.injection_suspect, c.pii_types,"
    " c.trust, c.version, c.series_id, c.effective_date,"
    " coalesce(d.title, c.title) AS title, coalesce(d.uri, c.uri) AS uri"
)


def citation_title(title: str | None, uri: str | None, document_id: str) -> str:
    """What a citation calls a document: its title, else its file name, else its id. The
    stored metadata stays the source's (change detection compares it), so the fallback is
    applied here, when evidence is read."""
    return title or title_from_uri(uri) or document_id


def _as_array(value: Any) -> npt.NDArray[np.float32]:
    """pgvector hands back numpy arrays or its ``Vector`` (text protocol): accept both."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if callable(to_numpy) else value, dtype=np.float32)


async def hydrate(
    conn: AsyncConnection,
    principal: Principal,
    chunk_ids: Sequence[str],
    preds: Sequence[Predicate],
    *,
    vector: npt.NDArray[np.float32] | None,
    with_embeddings: bool = False,
    space: Space | None = None,
) -> dict[str, ChunkRow]:
    """Visible, current, filter-matching child chunks among ``chunk_ids`` (by id).

    ``conn`` must be inside ``rls_transaction`` for ``principal``.
    """
    if not chunk_ids:
        return {}
    where, params = to_sql(preds, "c")
    extra: list[sql.Composable] = []
    args: list[Any] = []
    if vector is not None:
        extra.append(sql.SQL(", 1 - ({v} <=> %s) AS similarity").format(v=vector_sql(space, "c")))
        args.append(vector)
    else:
        extra.append(sql.SQL(", NULL::float8 AS similarity"))
    extra.append(sql.SQL(", c.embedding" if with_embeddings else ", NULL AS embedding"))
    query = sql.SQL(
        "SELECT {cols}{extra} FROM chunks c JOIN documents d"
        " ON d.tenant_id = c.tenant_id AND d.document_id = c.document_id"
        " WHERE c.tenant_id = %s AND c.chunk_id = ANY(%s::text[]) AND c.level = 'child'"
        " AND d.status = 'indexed' AND c.generation = d.generation AND {where}"
    ).format(cols=_COLUMNS, extra=sql.Composed(extra), where=where)
    args.extend([principal.tenant, list(chunk_ids), *params])
    with pg_errors():
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(query, args)
        rows = await cur.fetchall()
    out: dict[str, ChunkRow] = {}
    for r in rows:
        sim = r.pop("similarity")
        emb = r.pop("embedding")
        out[r["chunk_id"]] = ChunkRow(
            **{
                **r,
                "title": citation_title(r["title"], r["uri"], r["document_id"]),
                "section_path": tuple(r["section_path"] or ()),
                "pii_types": tuple(r["pii_types"] or ()),
            },
            similarity=None if sim is None else float(sim),
            embedding=None if emb is None else _as_array(emb),
        )
    return out
