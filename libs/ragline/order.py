"""The one ordering rule of a document's changes, used by the connector (intake), the
indexer (the guards under the document lock) and the status writes (their SQL mirrors
``STATUS_KEY_SQL``). docs/indexing.md, "Order rules", states it for users.

Content (upserts and deletes) is ordered by the *content key* ``(source_seq, rank,
digest)``: rank 0 for an upsert, 1 for a delete; digest is the upsert's content hash
('' for a delete). A change applies iff its key is greater than the stored one; an equal
key is the same change delivered again (a no-op). So, at one ``source_seq``:

* a delete wins over an upsert, whatever their arrival order (a source that deletes at
  its current revision number deletes that revision);
* of two *different* upserts the one with the greater content hash wins, whatever their
  arrival order, and every store (documents, chunks, OpenSearch, document_status) agrees
  on it. A source should not do this; the connector counts it (decision ``seq_conflict``).

ACL statements are ordered by the *ACL key* ``(acl_seq, rank)``: rank 0 for the ACL an
upsert carries (and its fast-path narrowing), 1 for an ACL change. A statement applies
iff its key is not smaller than the stored one, so an ACL change at the current revision
applies, a later ACL change at the same seq replaces an earlier one (the fast path keeps
them in source order; an identical redelivery is a ledger hit), and an upsert never
overwrites an ACL change stated at its own seq.

Both keys hold within one *reset generation* of the document (``seq_epoch``): ``ragline
documents reset-seq`` starts the next one, and a change accepted in an older generation
is stale whatever its keys (``epoch_stale``: a replay of a pre-reset event never
re-applies over what the reset forgot; docs/adr/0008, amendment 2026-12-01).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "ACL_FROM_CHANGE",
    "ACL_FROM_UPSERT",
    "AclKey",
    "ContentKey",
    "acl_applies",
    "content_key",
    "epoch_stale",
]

ACL_FROM_UPSERT = 0
ACL_FROM_CHANGE = 1


class ContentKey(NamedTuple):
    seq: int
    rank: int  # 0 upsert, 1 delete
    digest: str  # content hash of an upsert, '' for a delete


class AclKey(NamedTuple):
    seq: int
    rank: int  # ACL_FROM_UPSERT | ACL_FROM_CHANGE


def content_key(seq: int, *, deleted: bool, content_hash: str | None = None) -> ContentKey:
    return ContentKey(seq, 1 if deleted else 0, "" if deleted else (content_hash or ""))


def acl_applies(new: AclKey, stored: AclKey | None) -> bool:
    """An ACL statement replaces the stored one iff its key is not smaller."""
    return stored is None or new >= stored


def epoch_stale(event_epoch: int, current_epoch: int) -> bool:
    """Was the change accepted in an older reset generation than the document's?"""
    return event_epoch < current_epoch
