"""The reference model of the document lifecycle: what each principal may see after the
pipeline has settled, from the source changes sent so far (pure logic, no I/O; a
uniquely named module, imported directly by the lifecycle tests).

The rules (issue 12; docs/connector.md, docs/indexing.md, ADR 0002):

* ``source_seq`` orders the changes of one document; content (upserts, deletes) and ACL
  are ordered separately. A content change older than the last one is stale.
* An upsert newer than the last content change replaces the content; it also carries
  the full ACL, which takes effect unless an ACL change with a higher seq (or the same
  seq: an ACL change at the current revision) was applied. An upsert whose version is
  quarantined leaves the previous version where it was, readable only by the groups
  both versions grant (ADR 0007), and the document's status says ``quarantined``. A
  quarantined version is a content change like any other (ADR 0008): an upsert older
  than it is stale, whichever stage quarantined it (lifetest F9).
* A delete at or above the last content seq removes the document for every reader.
* An ACL change at or above the last content seq and at or above the last ACL change
  sets the ACL (equal seq: the later change wins; a change at the current revision is
  not stale). One for a document never seen is kept and applied when it arrives.
* A change is identified by what it is (tenant, document, kind, seq, content, ACL): the
  same change again (a redelivery, whatever its event id) changes nothing; two
  different changes that happen to share an event id are two changes.
* At one seq (ADR 0008) a delete beats an upsert, the same content again is a no-op
  (new metadata needs a new seq), and of two different contents the greater content hash
  wins. Where a quarantined version meets another at one seq the model does not say
  which wins: it then only requires every store to agree with the others until a newer
  change decides the document again (``exact`` is False meanwhile).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ragline.hashing import content_hash

__all__ = [
    "ACLS",
    "PRINCIPALS",
    "DocModel",
    "Version",
    "VersionKind",
]

# how a version ends: indexed ("ok") or quarantined, by the connector (oversize), the
# parser (empty), the scanner (a blocked secret) or the chunker (a fault the lifecycle
# world injects for these versions: "chunkfail")
VersionKind = Literal["ok", "empty", "oversize", "secret", "chunkfail"]
ACLS: tuple[tuple[str, ...], ...] = (("g1",), ("g2",), ("g1", "g2"))
PRINCIPALS: tuple[tuple[str, ...], ...] = (("g1",), ("g2",))

# an AWS-style key id and secret: the scanner's default patterns find both
_SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYZQ"
OVERSIZE_BYTES = 4096  # the connector's MAX_DOCUMENT_BYTES in the lifecycle tests


def _word(n: int) -> str:
    """A word only this version contains: letters only (no stemming, no version-looking
    or identifier-looking token), distinct for every ``n``."""
    letters = ""
    n += 26 * 26  # at least three letters
    while n:
        n, r = divmod(n, 26)
        letters = chr(ord("a") + r) + letters
    return f"qz{letters}"


@dataclass(frozen=True)
class Version:
    """One content version of a document; ``token`` appears only in its text."""

    n: int
    kind: VersionKind = "ok"

    @property
    def token(self) -> str:
        return _word(self.n)

    @property
    def text(self) -> str:
        t = self.token
        if self.kind == "empty":
            return "   \n"
        body = f"# Runbook {t}\n\nThe {t} procedure restarts the {t} service safely.\n"
        if self.kind == "secret":
            return body + f"\nConfig for {t}:\n{_SECRET}\n"
        if self.kind == "oversize":
            return body + ("padding words for the size limit\n" * (OVERSIZE_BYTES // 30 + 8))
        return body


@dataclass(frozen=True)
class Upsert:
    seq: int
    version: Version
    acl: tuple[str, ...]
    title: str


def _digest(up: Upsert) -> str:
    return content_hash(up.version.text.encode())


def _change_seq(change: tuple[object, ...]) -> int:
    """The seq of a change identity (``DocModel.changes``)."""
    what = change[1]
    if isinstance(what, Upsert):
        return what.seq
    assert isinstance(what, int)
    return what


@dataclass
class DocModel:
    content_seq: int | None = None  # last content change (upsert or delete) applied
    acl_key: tuple[int, int] | None = None  # (seq, 1 for an ACL change / 0 for an upsert)
    current: Version | None = None  # what readers get (None: nothing)
    title: str | None = None
    acl: tuple[str, ...] = ()
    status: str | None = None  # document_status once the document entered
    last: Upsert | tuple[str, int] | None = None  # the last content change applied
    exact: bool = True
    # set by the test when arrival order, not send order, decides what stays readable
    # (an indexable and a quarantined version crossing in two lanes): not exact until an
    # indexable version or a delete decides the document again
    unsure: bool = False
    changes: set[tuple[object, ...]] = field(default_factory=set)  # identities applied

    @property
    def live(self) -> bool:
        return self.current is not None

    def visible_to(self, groups: tuple[str, ...]) -> bool:
        return self.live and bool(set(self.acl) & set(groups))

    def _acl(self, key: tuple[int, int], acl: tuple[str, ...]) -> None:
        if self.acl_key is None or key >= self.acl_key:
            self.acl_key, self.acl = key, acl

    def upsert(self, up: Upsert) -> None:
        ident = ("upsert", up)
        if ident in self.changes:  # the same change again
            return
        self.changes.add(ident)
        if self.content_seq is not None and up.seq < self.content_seq:
            return
        if self.content_seq is not None and up.seq == self.content_seq:
            last = self.last
            if not isinstance(last, Upsert):  # a delete beats an upsert at its seq
                return
            if last.version.text == up.version.text:  # same content key: a no-op
                return
            if not self.exact or last.version.kind != "ok" or up.version.kind != "ok":
                self.exact = False  # which digest a quarantine carries is not modelled
                return
            if _digest(up) < _digest(last):  # the greater content hash wins (ADR 0008)
                return
        self.content_seq, self.last, self.exact = up.seq, up, True
        if up.version.kind != "ok" and self.unsure:
            self.exact = False
        if up.version.kind == "ok":
            self.unsure = False
            self.current, self.title, self.status = up.version, up.title, "indexed"
            self._acl((up.seq, 0), up.acl)
        else:  # ADR 0007: the old version stays, for the groups both versions grant
            self.status = "quarantined"
            narrowed = tuple(sorted(set(self.acl) & set(up.acl))) if self.live else up.acl
            self._acl((up.seq, 0), narrowed)

    def delete(self, seq: int) -> None:
        ident = ("delete", seq)
        if ident in self.changes:
            return
        self.changes.add(ident)
        if self.content_seq is not None and seq < self.content_seq:
            return
        self.content_seq, self.last, self.exact = seq, ("delete", seq), True
        self.unsure = False
        self.current, self.title, self.status = None, None, "deleted"

    def reset_seq(self, to: int) -> None:
        """``ragline documents reset-seq --to``: the document's seqs above ``to`` are
        lowered to it and the changes above it are forgotten (their ledger entries are
        dropped): the same change delivered again applies like a new one."""
        if self.content_seq is not None:
            self.content_seq = min(self.content_seq, to)
        if self.acl_key is not None:
            self.acl_key = (min(self.acl_key[0], to), self.acl_key[1])
        self.changes = {c for c in self.changes if _change_seq(c) <= to}

    def acl_change(self, seq: int, acl: tuple[str, ...]) -> None:
        ident = ("acl", seq, acl)
        if ident in self.changes:
            return
        self.changes.add(ident)
        if self.content_seq is not None and seq < self.content_seq:
            return
        self._acl((seq, 1), acl)
