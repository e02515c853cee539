"""Intake decisions: what a source change becomes (doc.fetched, doc.control or nothing).

Pure functions over the stored state of the document, so the whole policy (stale,
unchanged, metadata-only, content, seq conflicts, implausible seqs, ACL narrowing) is
unit-testable without a database or a broker. The order itself is ``ragline.order``.
Every event passed on carries an id minted from what the change is
(``events.change_identity``): the caller's event id is correlation only.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import NamedTuple

from ragline.errors import PermanentError
from ragline.events import (
    AclChange,
    Classification,
    DocControl,
    DocFetched,
    DocumentMeta,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
    acl_digest,
    change_identity,
)
from ragline.order import ACL_FROM_CHANGE, ACL_FROM_UPSERT, AclKey, ContentKey, content_key

__all__ = [
    "Accepted",
    "Decision",
    "ImplausibleSequence",
    "SeqRule",
    "StatedAcl",
    "StoredState",
    "acl_statement",
    "control_event",
    "decide_before_fetch",
    "decide_control",
    "decide_upsert",
    "failed_version_counts",
    "fetched_event",
    "narrowing_event",
    "narrows",
    "seq_implausible",
    "upsert_identity",
]


class Decision(StrEnum):
    CONTENT = "content"  # new or changed bytes: the full pipeline runs
    METADATA = "metadata"  # same bytes, new metadata: pipeline re-runs, embeddings cached
    UNCHANGED = "unchanged"  # same bytes and metadata as indexed: nothing to do
    STALE = "stale"  # older than what the platform already holds: dropped
    # another version was stated at the same source_seq and wins by the order rule
    # (ragline.order): dropped, counted, so a misbehaving source is visible
    SEQ_CONFLICT = "seq_conflict"
    IMPLAUSIBLE_SEQ = "implausible_seq"  # a seq jump beyond the configured rule: DLQ
    FORWARD = "forward"  # delete / acl change passed on to the indexer
    DELETE = "delete"  # (metric label of a forwarded delete)
    NARROWING = "narrowing"  # (metric label of an upsert's ACL narrowing on the fast path)
    # accepted by an earlier delivery of the same batch (a crash before its offset commit),
    # stale now only against that batch's own newer change: passed on again (ADR 0008)
    AGAIN = "again"


class Accepted(NamedTuple):
    """A change intake accepted and the indexer has not applied yet, as the status row's
    log holds it (``document_status.accepted_changes``, migration 0140)."""

    kind: str  # "delete" | "acl" | "content" | "metadata" (an upsert: its decision)
    seq: int
    identity: str  # the event id it was passed on with (events.change_identity)
    content_hash: str = ""  # an upsert's

    def entry(self, seq_epoch: int) -> list[str | int]:
        """The log entry (JSON): kind, seq, identity, generation, content hash."""
        return [self.kind, self.seq, self.identity, seq_epoch, self.content_hash]


class StatedAcl(NamedTuple):
    """An ACL statement intake accepted: its ACL key (ragline.order) and its digest
    (``events.acl_digest`` of the groups and classification)."""

    seq: int
    rank: int  # ACL_FROM_UPSERT | ACL_FROM_CHANGE
    digest: str

    @property
    def key(self) -> AclKey:
        return AclKey(self.seq, self.rank)


def acl_statement(
    event: SourceUpsert | SourceAclChange,
    meta: DocumentMeta | None = None,
    *,
    kept: str | None = None,
) -> StatedAcl:
    """The ACL statement a change makes: an upsert's full ACL (``meta``: its effective
    metadata) at (seq, 0), an ACL change's at (seq, 1); an ACL change that states no
    classification keeps the document's (``kept``: the indexed one, if known)."""
    if isinstance(event, SourceAclChange):
        cls = event.classification.value if event.classification is not None else kept
        digest = acl_digest(event.acl_groups, cls)
        return StatedAcl(event.source_seq, ACL_FROM_CHANGE, digest)
    m = meta or event.meta
    digest = acl_digest(m.acl_groups, m.classification.value)
    return StatedAcl(event.source_seq, ACL_FROM_UPSERT, digest)


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
    acl_groups: tuple[str, ...] | None = None  # documents.acl_groups (what readers have)
    classification: str | None = None
    seq_epoch: int = 0  # document_status.seq_epoch: the reset generation (migration 0090)
    # document_status.stated_acl_*: the newest ACL statement intake accepted (an upsert's
    # or an ACL change's), applied or still in flight (migration 0130)
    stated_acl: StatedAcl | None = None
    # document_status.accepted_changes of this generation: the changes intake accepted
    # that the indexer has not applied yet (migration 0140)
    accepted: tuple[Accepted, ...] = ()

    def accepted_again(self, identity: str) -> Accepted | None:
        """The change with this identity, if intake accepted it already: a redelivery
        (its batch crashed before the offset commit) to pass on again, even though the
        batch's own newer change, recorded with it, makes it look stale now."""
        return next((a for a in self.accepted if a.identity == identity), None)

    def upsert_accepted_at(self, seq: int) -> bool:
        """Did intake accept an upsert at ``seq`` not applied yet (fetch it again)?"""
        return any(a.seq == seq and a.kind in ("content", "metadata") for a in self.accepted)

    def newest_seq(self, *, include_acl: bool) -> int | None:
        """The highest source_seq seen for this document.

        An ACL change never makes a content upsert or a delete stale (it carries no
        bytes); an upsert does make an older ACL change stale (it carries the full ACL).
        """
        # an 'awaiting_content' row (an ACL change parked before any content) states no seq
        pending = None if self.pending_status == "awaiting_content" else self.pending_seq
        seqs = [self.source_seq, pending]
        if include_acl:
            seqs.append(self.acl_seq)
        known = [s for s in seqs if s is not None]
        return max(known) if known else None

    def newest_key(self) -> ContentKey | None:
        """The greatest content key held (ragline.order): the applied row's or the
        status row's (an 'accepted' status without a hash is an accepted delete)."""
        keys = []
        if self.source_seq is not None and self.status is not None:
            keys.append(
                content_key(
                    self.source_seq,
                    deleted=self.status == "deleted",
                    content_hash=self.content_hash,
                )
            )
        if self.pending_seq is not None and self.pending_status is not None:
            deleted = self.pending_status == "deleted" or (
                self.pending_status == "accepted" and self.pending_hash is None
            )
            keys.append(
                content_key(self.pending_seq, deleted=deleted, content_hash=self.pending_hash)
            )
        return max(keys) if keys else None

    @property
    def indexed(self) -> bool:
        return self.status == "indexed"

    def with_statement(self, stated: StatedAcl) -> StoredState:
        """This state after intake accepted ``stated`` (kept if not older)."""
        if self.stated_acl is not None and self.stated_acl.key > stated.key:
            return self
        return replace(self, stated_acl=stated)

    def statement_differs(self, stated: StatedAcl) -> bool:
        """Is the newest ACL statement intake accepted older than ``stated`` and another
        ACL? (An ACL change still in flight, lifetest ACL-1: the upsert restates an ACL
        the document will not have once that change is applied.)"""
        held = self.stated_acl
        return held is not None and held.key < stated.key and held.digest != stated.digest

    def acl_restated(self, source_seq: int, meta: DocumentMeta) -> bool:
        """Would an upsert at ``source_seq`` carrying ``meta`` change what readers have
        (now, or once the changes already accepted are applied)? Its ACL (the full ACL,
        ACL key (seq, 0)) is newer than an ACL statement held and differs from it: an ACL
        change applied since the indexed version (lifetest F13), or one accepted and still
        in flight (lifetest ACL-1: compared with what was last *accepted*, not only what
        was last indexed). Then the same bytes and metadata are not "unchanged"."""
        if self.statement_differs(
            StatedAcl(
                source_seq,
                ACL_FROM_UPSERT,
                acl_digest(meta.acl_groups, meta.classification.value),
            )
        ):
            return True
        if self.acl_groups is None or (self.acl_seq is not None and source_seq <= self.acl_seq):
            return False
        groups = tuple(sorted(self.acl_groups))
        cls = self.classification
        return groups != tuple(sorted(meta.acl_groups)) or (
            cls is not None and cls != meta.classification.value
        )

    @property
    def in_flight(self) -> bool:
        """The ``documents`` row is not the last word: a change was accepted that the
        indexer has not confirmed yet (or that was lost with a broker), or a newer version
        was quarantined (readers keep the last good version under a narrowed ACL and the
        status says quarantined: the indexed bytes stated again are a change)."""
        if self.pending_status == "accepted":
            return True
        if self.pending_status != "quarantined" or self.pending_seq is None:
            return False
        if self.source_seq is None or self.status is None:
            return True
        held = content_key(
            self.source_seq, deleted=self.status == "deleted", content_hash=self.content_hash
        )
        return content_key(self.pending_seq, deleted=False, content_hash=self.pending_hash) > held


class ImplausibleSequence(PermanentError):
    """A source_seq the configured rule refuses: dead-lettered with the reason, nothing
    changes (an operator replays it after ``ragline documents reset-seq`` if it was real)."""


@dataclass(frozen=True, kw_only=True)
class SeqRule:
    """When a source_seq is implausible (docs/connector.md, "Sequence rules"): above
    ``max_source_seq``, or more than ``max_seq_jump`` above the newest seq Postgres holds
    for the document (0 disables the jump check)."""

    max_source_seq: int
    max_seq_jump: int


def seq_implausible(stored: StoredState | None, source_seq: int, rule: SeqRule) -> str | None:
    """Why ``source_seq`` is refused, or None. Never names document content."""
    if source_seq > rule.max_source_seq:
        return f"source_seq is above the configured ceiling {rule.max_source_seq}"
    newest = stored.newest_seq(include_acl=True) if stored is not None else None
    if rule.max_seq_jump and newest is not None and source_seq - newest > rule.max_seq_jump:
        return (
            f"source_seq jumps {source_seq - newest} above the newest known "
            f"({newest}); the configured maximum jump is {rule.max_seq_jump}"
        )
    return None


def _older_content(stored: StoredState | None, key: ContentKey) -> Decision | None:
    """STALE / SEQ_CONFLICT when a greater content key is held, else None."""
    newest = stored.newest_key() if stored is not None else None
    if newest is None or newest <= key:
        return None
    if newest.seq == key.seq and newest.rank == key.rank == 0:
        return Decision.SEQ_CONFLICT
    return Decision.STALE


def failed_version_counts(stored: StoredState | None, event: SourceUpsert) -> bool:
    """Does an upsert whose content could not be obtained (quarantined at the fetch, or
    failing and retried) still count as seen? Yes unless a greater content key is held:
    a version that was stated and quarantined is a content change like any other, so an
    older upsert after it is stale (docs/adr/0008, lifetest F9). Its key is the one its
    ``doc.quarantined`` carries: the source's content hash, if it stated one."""
    key = content_key(event.source_seq, deleted=False, content_hash=event.content_hash)
    return _older_content(stored, key) is None


def decide_upsert(
    stored: StoredState | None,
    *,
    source_seq: int,
    content_hash: str,
    meta_hash: str,
    meta: DocumentMeta | None = None,
) -> Decision:
    """The policy for an upsert whose bytes have been hashed.

    An equal content key is not stale: a redelivered event must be able to finish the
    work its first delivery started (idempotent downstream). Nothing is dropped as
    unchanged while another change is in flight: it would win at the indexer. New
    metadata needs a new seq (at the same seq it would lose at the indexer).
    """
    key = content_key(source_seq, deleted=False, content_hash=content_hash)
    older = _older_content(stored, key)
    if older is not None:
        return older
    if stored is None or not stored.indexed or stored.content_hash != content_hash:
        return Decision.CONTENT
    if stored.in_flight:  # an older change in flight would otherwise overwrite this one
        return Decision.CONTENT
    if stored.meta_hash != meta_hash:
        if stored.source_seq is not None and stored.source_seq >= source_seq:
            return Decision.SEQ_CONFLICT
        return Decision.METADATA
    if meta is not None and stored.acl_restated(source_seq, meta):
        return Decision.METADATA  # the same version restates an ACL changed since
    return Decision.UNCHANGED


def decide_before_fetch(
    stored: StoredState | None, event: SourceUpsert, meta_hash: str
) -> Decision | None:
    """Decide before fetching when the source told us its content hash (or when any
    content at this seq would lose: a delete or a newer change is held).

    Returns STALE, SEQ_CONFLICT or UNCHANGED when the bytes are not needed, else None.
    """
    newest = stored.newest_key() if stored is not None else None
    if newest is not None and (
        newest.seq > event.source_seq or (newest.seq == event.source_seq and newest.rank > 0)
    ):
        return Decision.STALE
    if event.content_hash is not None:
        older = _older_content(
            stored, content_key(event.source_seq, deleted=False, content_hash=event.content_hash)
        )
        if older is not None:
            return older
    if (
        event.content_hash is not None
        and stored is not None
        and stored.indexed
        and not stored.in_flight
        and stored.content_hash == event.content_hash
        and stored.meta_hash == meta_hash
        and not stored.acl_restated(event.source_seq, event.meta)
    ):
        return Decision.UNCHANGED
    return None


def decide_control(stored: StoredState | None, event: SourceDelete | SourceAclChange) -> Decision:
    """Deletes and ACL changes older than what is held are dropped; others go on, an
    equal seq included (a source that deletes or re-permissions at its current revision;
    the indexer's order rule decides, ragline.order).

    A delete for a document never seen is still forwarded: the indexer keeps the
    tombstone's source_seq so an older upsert still in flight cannot resurrect it.
    """
    include_acl = isinstance(event, SourceAclChange)
    newest = stored.newest_seq(include_acl=include_acl) if stored is not None else None
    return Decision.STALE if newest is not None and newest > event.source_seq else Decision.FORWARD


def narrows(
    stored: StoredState | None, meta: DocumentMeta, stated: StatedAcl | None = None
) -> bool:
    """Does the upsert's ACL or classification take something away from what readers
    of the indexed version have now, or will have once an accepted ACL change still in
    flight is applied (``stated``: the upsert's own statement; then any other ACL counts:
    a narrowing is an intersection, harmless when it takes nothing away)? Then it also
    takes the fast path (ADR 0007)."""
    if stored is None or not stored.indexed or stored.acl_groups is None:
        return False
    held = stored.stated_acl
    if (
        stated is not None
        and held is not None
        and stored.statement_differs(stated)
        # the statement held is not what readers have: accepted, not applied yet
        and held.digest != acl_digest(stored.acl_groups, stored.classification)
    ):
        return True
    if not set(stored.acl_groups) <= set(meta.acl_groups):
        return True
    order = [c.value for c in Classification]
    now = stored.classification
    return now in order and order.index(meta.classification.value) > order.index(now)


def upsert_identity(event: SourceUpsert, *, content_hash: str, meta_digest: str) -> str:
    """The identity of an upsert's ``doc.fetched`` (its bytes and metadata, ADR 0006)."""
    return change_identity(
        event.tenant_id,
        event.document_id,
        "source.upsert",
        event.source_seq,
        f"{content_hash}:{meta_digest}",
    )


def fetched_event(
    event: SourceUpsert,
    *,
    meta: DocumentMeta,
    data: bytes,
    content_hash: str,
    change: Decision,
    meta_digest: str,
) -> DocFetched:
    if change not in (Decision.CONTENT, Decision.METADATA):
        raise ValueError(f"no doc.fetched for decision {change}")
    identity = upsert_identity(event, content_hash=content_hash, meta_digest=meta_digest)
    return DocFetched(
        **{**event.derived("doc.fetched"), "event_id": identity, "content_hash": content_hash},
        meta=meta,
        content_b64=base64.b64encode(data).decode("ascii"),
        size_bytes=len(data),
        change="metadata" if change is Decision.METADATA else "content",
    )


def narrowing_event(event: SourceUpsert, meta: DocumentMeta) -> DocControl:
    """The fast-path ACL statement of an upsert whose ACL narrows the current one."""
    cls = meta.classification
    identity = change_identity(
        event.tenant_id,
        event.document_id,
        "source.upsert.acl",
        event.source_seq,
        acl_digest(meta.acl_groups, cls.value),
    )
    return DocControl(
        **{**event.derived("doc.control"), "event_id": identity, "content_hash": None},
        action="acl",
        acl=AclChange(acl_groups=meta.acl_groups, classification=cls, narrowing=True),
    )


def control_event(event: SourceDelete | SourceAclChange) -> DocControl:
    t, d, seq = event.tenant_id, event.document_id, event.source_seq
    if isinstance(event, SourceDelete):
        identity = change_identity(t, d, "source.delete", seq)
        return DocControl(**{**event.derived("doc.control"), "event_id": identity}, action="delete")
    cls = event.classification.value if event.classification is not None else None
    identity = change_identity(t, d, "source.acl", seq, acl_digest(event.acl_groups, cls))
    return DocControl(
        **{**event.derived("doc.control"), "event_id": identity},
        action="acl",
        acl=AclChange(acl_groups=event.acl_groups, classification=event.classification),
    )
