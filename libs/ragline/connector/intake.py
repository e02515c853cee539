"""Intake decisions: what a source change becomes (doc.fetched, doc.control or nothing).

Pure functions over the stored state of the document, so the whole policy (stale,
unchanged, metadata-only, content) is unit-testable without a database or a broker.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from enum import StrEnum

from ragline.events import (
    AclChange,
    DocControl,
    DocFetched,
    DocumentMeta,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
)

__all__ = [
    "Decision",
    "StoredState",
    "control_event",
    "decide_before_fetch",
    "decide_control",
    "decide_upsert",
    "fetched_event",
]


class Decision(StrEnum):
    CONTENT = "content"  # new or changed bytes: the full pipeline runs
    METADATA = "metadata"  # same bytes, new metadata: pipeline re-runs, embeddings cached
    UNCHANGED = "unchanged"  # same bytes and metadata as indexed: nothing to do
    STALE = "stale"  # older than what the platform already holds: dropped
    FORWARD = "forward"  # delete / acl change passed on to the indexer
    DELETE = "delete"  # (metric label of a forwarded delete)


@dataclass(frozen=True, kw_only=True)
class StoredState:
    """What Postgres holds about one document (``documents`` + ``document_status``)."""

    source_seq: int | None = None  # documents.source_seq (last content/delete applied)
    acl_seq: int | None = None
    content_hash: str | None = None
    meta_hash: str | None = None
    status: str | None = None  # documents.status: 'indexed' | 'deleted' | None (no row)
    pending_seq: int | None = None  # document_status.source_seq (accepted, maybe in flight)
    pending_status: str | None = None
    pending_hash: str | None = None

    def newest_seq(self, *, include_acl: bool) -> int | None:
        """The highest source_seq seen for this document.

        An ACL change never makes a content upsert or a delete stale (it carries no
        bytes); an upsert does make an older ACL change stale (it carries the full ACL).
        """
        seqs = [self.source_seq, self.pending_seq]
        if include_acl:
            seqs.append(self.acl_seq)
        known = [s for s in seqs if s is not None]
        return max(known) if known else None

    @property
    def indexed(self) -> bool:
        return self.status == "indexed"

    @property
    def in_flight(self) -> bool:
        """A change was accepted that the indexer has not confirmed yet (or that was
        lost with a broker): the ``documents`` row may not be the version that wins."""
        return self.pending_status == "accepted"


def _older(stored: StoredState | None, source_seq: int, *, include_acl: bool = False) -> bool:
    newest = stored.newest_seq(include_acl=include_acl) if stored is not None else None
    return newest is not None and newest > source_seq


def decide_upsert(
    stored: StoredState | None, *, source_seq: int, content_hash: str, meta_hash: str
) -> Decision:
    """The policy for an upsert whose bytes have been hashed.

    Equal ``source_seq`` is not stale: a redelivered event must be able to finish the
    work its first delivery started (idempotent downstream). Nothing is dropped as
    unchanged while another change is in flight: it would win at the indexer.
    """
    if _older(stored, source_seq):
        return Decision.STALE
    if stored is None or not stored.indexed or stored.content_hash != content_hash:
        return Decision.CONTENT
    if stored.in_flight:  # an older change in flight would otherwise overwrite this one
        return Decision.CONTENT
    if stored.meta_hash != meta_hash:
        return Decision.METADATA
    return Decision.UNCHANGED


def decide_before_fetch(
    stored: StoredState | None, event: SourceUpsert, meta_hash: str
) -> Decision | None:
    """Decide before fetching when the source told us its content hash.

    Returns STALE or UNCHANGED when the bytes are not needed, else None (fetch them).
    """
    if _older(stored, event.source_seq):
        return Decision.STALE
    if (
        event.content_hash is not None
        and stored is not None
        and stored.indexed
        and not stored.in_flight
        and stored.content_hash == event.content_hash
        and stored.meta_hash == meta_hash
    ):
        return Decision.UNCHANGED
    return None


def decide_control(stored: StoredState | None, event: SourceDelete | SourceAclChange) -> Decision:
    """Deletes and ACL changes older than what is held are dropped; others go on.

    A delete for a document never seen is still forwarded: the indexer keeps the
    tombstone's source_seq so an older upsert still in flight cannot resurrect it.
    """
    include_acl = isinstance(event, SourceAclChange)
    return (
        Decision.STALE
        if _older(stored, event.source_seq, include_acl=include_acl)
        else Decision.FORWARD
    )


def fetched_event(
    event: SourceUpsert,
    *,
    meta: DocumentMeta,
    data: bytes,
    content_hash: str,
    change: Decision,
) -> DocFetched:
    if change not in (Decision.CONTENT, Decision.METADATA):
        raise ValueError(f"no doc.fetched for decision {change}")
    return DocFetched(
        **{**event.derived("doc.fetched"), "content_hash": content_hash},
        meta=meta,
        content_b64=base64.b64encode(data).decode("ascii"),
        size_bytes=len(data),
        change="metadata" if change is Decision.METADATA else "content",
    )


def control_event(event: SourceDelete | SourceAclChange) -> DocControl:
    if isinstance(event, SourceDelete):
        return DocControl(**event.derived("doc.control"), action="delete")
    return DocControl(
        **event.derived("doc.control"),
        action="acl",
        acl=AclChange(acl_groups=event.acl_groups, classification=event.classification),
    )
