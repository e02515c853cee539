"""The ACL statements of quarantined versions newer than the indexed one
(``document_status.quarantine_acls``, migration 0131; docs/adr/0007, lifetest ACL-3).

ADR 0007: a quarantined version narrows what stays indexed of an older one to the groups
both grant, whichever reaches the indexer first. When the older version is not indexed yet
as the quarantine is recorded, the narrowing waits for it: the status row's ACL keeps one
statement (the newest), so with two newer quarantined versions only the newest one
narrowed it. This log keeps each one (content key, groups, classification), so the older
version is indexed under the intersection of all that are newer than it.

Written only by the indexer, under the document's lock. Bounded: at most ``MAX_ENTRIES``;
beyond, the two oldest entries merge into one with the newer key and the intersection of
both ACLs (never wider for any version: one older than both gets both, one between them
gets more narrowing than it needs, never less).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection

from ragline.events import Classification
from ragline.order import ContentKey
from ragline.store.pg_errors import pg_errors

__all__ = [
    "MAX_ENTRIES",
    "QuarantineAcl",
    "add_quarantine_acl",
    "merge_entries",
    "prune_quarantine_acls",
    "quarantine_acls_above",
]

MAX_ENTRIES = 16
_CLASS_ORDER = [c.value for c in Classification]


@dataclass(frozen=True)
class QuarantineAcl:
    key: ContentKey  # the quarantined version's content key (an upsert's: rank 0)
    groups: tuple[str, ...]
    classification: str | None

    def to_json(self) -> list[Any]:
        return [self.key.seq, self.key.digest, list(self.groups), self.classification]

    @classmethod
    def from_json(cls, raw: list[Any]) -> QuarantineAcl:
        seq, digest, groups, classification = raw
        return cls(ContentKey(int(seq), 0, str(digest)), tuple(sorted(groups)), classification)


def _stricter(a: str | None, b: str | None) -> str | None:
    known = [c for c in (a, b) if c in _CLASS_ORDER]
    return max(known, key=_CLASS_ORDER.index) if known else (a or b)


def merge_entries(entries: list[QuarantineAcl], new: QuarantineAcl) -> list[QuarantineAcl]:
    """The log with ``new`` added (once per key), oldest first, at most MAX_ENTRIES."""
    if any(e.key == new.key for e in entries):
        return entries
    out = sorted([*entries, new], key=lambda e: e.key)
    while len(out) > MAX_ENTRIES:
        a, b = out[0], out[1]
        merged = QuarantineAcl(
            b.key,
            tuple(sorted(set(a.groups) & set(b.groups))),
            _stricter(a.classification, b.classification),
        )
        out = [merged, *out[2:]]
    return out


async def _read(conn: AsyncConnection[Any], t: str, d: str) -> list[QuarantineAcl]:
    with pg_errors():
        cur = await conn.execute(
            "SELECT quarantine_acls FROM document_status WHERE tenant_id = %s AND document_id = %s",
            (t, d),
        )
        row = await cur.fetchone()
    raw = row[0] if row is not None else None
    return [QuarantineAcl.from_json(e) for e in raw or []]


async def _write(conn: AsyncConnection[Any], t: str, d: str, entries: list[QuarantineAcl]) -> None:
    value = json.dumps([e.to_json() for e in entries]) if entries else None
    with pg_errors():
        await conn.execute(
            "UPDATE document_status SET quarantine_acls = %s::jsonb"
            " WHERE tenant_id = %s AND document_id = %s"
            " AND quarantine_acls IS DISTINCT FROM %s::jsonb",
            (value, t, d, value),
        )


async def add_quarantine_acl(
    conn: AsyncConnection[Any], t: str, d: str, entry: QuarantineAcl
) -> None:
    """Record a quarantined version's ACL (under the document's lock; the status row
    exists: the quarantine's status write made it)."""
    entries = await _read(conn, t, d)
    merged = merge_entries(entries, entry)
    if merged != entries:
        await _write(conn, t, d, merged)


async def quarantine_acls_above(
    conn: AsyncConnection[Any], t: str, d: str, key: ContentKey
) -> list[QuarantineAcl]:
    """The entries of versions newer than ``key``."""
    return [e for e in await _read(conn, t, d) if e.key > key]


async def prune_quarantine_acls(
    conn: AsyncConnection[Any], t: str, d: str, key: ContentKey
) -> None:
    """Forget the entries a change at ``key`` (an indexed version, a delete) made moot."""
    entries = await _read(conn, t, d)
    kept = [e for e in entries if e.key > key]
    if kept != entries:
        await _write(conn, t, d, kept)
