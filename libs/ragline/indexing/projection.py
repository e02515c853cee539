"""Pure projections: a doc.embedded event into document/chunk rows, a chunk row into its
OpenSearch source. No I/O, so the mapping between the three shapes is unit-tested.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from ragline.errors import ContractError
from ragline.events import ChunkLevel, DocEmbedded, seal_problem
from ragline.hashing import meta_hash
from ragline.store.chunks import OS_FIELDS
from ragline.store.os_index import IDENT_FIELD

__all__ = ["DocumentFields", "chunk_rows", "document_title", "document_values", "os_source"]


@dataclass(frozen=True, kw_only=True)
class DocumentFields:
    """Document-level values decided under the lock (ACL may come from a newer acl_seq)."""

    acl_groups: tuple[str, ...]
    classification: str
    acl_seq: int
    acl_rank: int
    generation: int
    revision: int
    superseded: bool
    superseded_by: str | None


def _scanned(event: DocEmbedded) -> DocEmbedded:
    """``event``, if its text is what the scanner emitted (sealed, unchanged): no index
    row is written from anything else (issue 31, docs/scanning.md)."""
    why = seal_problem(event)
    if why is not None:
        raise ContractError(f"index row refused: {why}")
    return event


def document_values(event: DocEmbedded, fields: DocumentFields) -> dict[str, Any]:
    """The ``documents`` row of the new generation (documents.DOCUMENT_COLUMNS)."""
    meta = _scanned(event).meta
    return {
        "content_hash": event.content_hash,
        "meta_hash": meta_hash(meta),
        "source_seq": event.source_seq,
        "acl_seq": fields.acl_seq,
        "acl_rank": fields.acl_rank,
        "generation": fields.generation,
        "revision": fields.revision,
        "status": "indexed",
        "title": document_title(event),
        "uri": meta.uri,
        "source_type": meta.source_type,
        "mime_type": meta.mime_type,
        "language": meta.language,
        "version": meta.version,
        "series_id": meta.series_id,
        "supersedes": sorted(set(meta.supersedes) - {event.document_id}),
        "effective_date": meta.effective_date,
        "expiry_date": meta.expiry_date,
        "superseded": fields.superseded,
        "superseded_by": fields.superseded_by,
        "acl_groups": list(fields.acl_groups),
        "classification": fields.classification,
        "trust": meta.trust.value,
        "metadata": dict(meta.metadata),
        "findings": event.findings.model_dump(mode="json"),
        "chunk_count": len(event.chunks),
    }


def chunk_rows(event: DocEmbedded, fields: DocumentFields) -> list[dict[str, Any]]:
    """One ``chunks`` row per chunk of the event (store.chunks.CHUNK_COLUMNS)."""
    meta = _scanned(event).meta
    rows: list[dict[str, Any]] = []
    for c in event.chunks:
        enr = c.enrichment
        metadata: dict[str, Any] = {
            "strategy": c.strategy,
            "strategy_version": c.strategy_version,
            "extra": dict(c.extra),
            "injection_rules": list(c.flags.injection_rules),
            "redactions": c.flags.redactions,
        }
        if enr is not None:
            metadata["enrichment"] = enr.model_dump(mode="json", exclude={"contextual_header"})
        vector = None
        if c.level is ChunkLevel.CHILD and c.embedding is not None:
            vector = np.asarray(c.embedding, dtype=np.float32)
        rows.append(
            {
                "tenant_id": event.tenant_id,
                "chunk_id": c.chunk_id,
                "document_id": event.document_id,
                "generation": fields.generation,
                "parent_id": c.parent_id,
                "level": c.level.value,
                "ordinal": c.ordinal,
                "text": c.text,
                "contextual_header": enr.contextual_header if enr is not None else None,
                "section_path": list(c.section_path),
                "content_type": c.content_type,
                "page_start": c.page_start,
                "page_end": c.page_end,
                "line_start": c.line_start,
                "line_end": c.line_end,
                "token_count": c.token_count,
                "metadata": metadata,
                "acl_groups": list(fields.acl_groups),
                "classification": fields.classification,
                "trust": meta.trust.value,
                "version": meta.version,
                "series_id": meta.series_id,
                "effective_date": meta.effective_date,
                "expiry_date": meta.expiry_date,
                "superseded": fields.superseded,
                "injection_suspect": c.flags.injection_suspect,
                "pii_types": sorted(set(c.flags.pii_types)),
                "embedding": vector,
                "embedding_model": event.embedding_model if vector is not None else None,
                "embedding_revision": event.embedding_revision if vector is not None else None,
                "language": enr.language if enr is not None else meta.language,
                "title": document_title(event),
                "uri": meta.uri,
                "source_type": meta.source_type,
            }
        )
    return rows


def _json_value(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, tuple | list):
        return [_json_value(v) for v in value]
    return value


def os_source(row: Mapping[str, Any], revision: int) -> dict[str, Any]:
    """The OpenSearch document of a child chunk row, stamped with the document revision."""
    source = {f: _json_value(row.get(f)) for f in OS_FIELDS}
    source["section_path"] = " / ".join(row.get("section_path") or ())
    source["revision"] = revision
    # what the identifier lookup searches (store/os_index.py IDENT_FIELD): the row's
    # ``ident_text`` as ``fetch_children`` reads it
    source[IDENT_FIELD] = row.get("ident_text")
    return source


def document_title(event: DocEmbedded) -> str | None:
    """What citations call the document: the source's ``meta.title``, else the title the
    parser read from the document itself (HTML <title>, DOCX/PDF metadata, a Markdown
    H1; the chunker carries it as ``extra["doc_title"]``). None lets the query side fall
    back to the file name. ``meta`` itself stays as the source sent it (its hash)."""
    if event.meta.title:
        return event.meta.title
    for c in event.chunks:
        parsed = c.extra.get("doc_title")
        if isinstance(parsed, str) and parsed.strip():
            return parsed.strip()[:1024]
    return None
