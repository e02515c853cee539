"""Polling watcher for the filesystem source: each poll scans the tree, diffs it against
the previous snapshot and publishes upserts, deletes and ACL-only changes.

Polling rather than inotify: it works on network shares and in containers, and a scan
of tens of thousands of files is a few stat calls per file. The snapshot can be kept in
a state file so a restarted watcher publishes only what changed while it was down
(without one, the first poll re-publishes every file; the connector drops the unchanged
ones by content hash, and ``ragline sync`` catches deletions that happened meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from ragline.connector.fs_source import FileDoc, FilesystemSource, ScanResult, rest_key
from ragline.connector.metrics import FS_CHANGES, FS_SKIPPED
from ragline.connector.source import EventSink
from ragline.errors import BackendUnavailable
from ragline.events import BULK, INTERACTIVE, EventBase, Lane, Topics
from ragline.runtime.lanes import with_lane

__all__ = ["ChangeKind", "FsChange", "FsWatcher", "SnapEntry", "diff"]

_STATE_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class SnapEntry:
    """What was last published for one file."""

    mtime_ns: int
    size: int
    source_seq: int
    meta_hash: str
    rest_hash: str  # metadata without ACL/classification

    @classmethod
    def of(cls, doc: FileDoc) -> SnapEntry:
        return cls(
            mtime_ns=doc.mtime_ns,
            size=doc.size,
            source_seq=doc.source_seq,
            meta_hash=doc.meta_hash,
            rest_hash=rest_key(doc.meta),
        )


class ChangeKind(StrEnum):
    UPSERT = "upsert"
    DELETE = "delete"
    ACL = "acl"


@dataclass(frozen=True, kw_only=True)
class FsChange:
    kind: ChangeKind
    rel: str
    doc: FileDoc | None = None
    prev: SnapEntry | None = None


def diff(
    previous: Mapping[str, SnapEntry], scan: ScanResult
) -> tuple[list[FsChange], dict[str, SnapEntry]]:
    """The changes to publish, and the snapshot entries that need no publishing."""
    changes: list[FsChange] = []
    quiet: dict[str, SnapEntry] = {}
    for rel, doc in scan.docs.items():
        prev = previous.get(rel)
        if prev is None or (prev.mtime_ns, prev.size) != (doc.mtime_ns, doc.size):
            changes.append(FsChange(kind=ChangeKind.UPSERT, rel=rel, doc=doc, prev=prev))
        elif prev.meta_hash != doc.meta_hash:
            kind = ChangeKind.ACL if prev.rest_hash == rest_key(doc.meta) else ChangeKind.UPSERT
            changes.append(FsChange(kind=kind, rel=rel, doc=doc, prev=prev))
        else:
            quiet[rel] = replace(prev, source_seq=doc.source_seq)
    for rel, prev in previous.items():
        if rel in scan.held:
            quiet[rel] = prev
        elif rel not in scan.docs:
            changes.append(FsChange(kind=ChangeKind.DELETE, rel=rel, prev=prev))
    return changes, quiet


class FsWatcher:
    def __init__(
        self,
        source: FilesystemSource,
        sink: EventSink,
        *,
        state_file: Path | None = None,
        interval_s: float = 2.0,
        logger: logging.Logger | None = None,
    ) -> None:
        self.source = source
        self.sink = sink
        self.state_file = state_file
        self.interval_s = interval_s
        self.log = logger or logging.getLogger("ragline.connector.fs")
        self.snapshot: dict[str, SnapEntry] = self._load_state()
        # documents of the last scan no policy or sidecar gives readers (no acl_groups):
        # indexed, readable by nobody; logged whenever the list changes
        self.no_readers: list[str] = []
        # the first poll without a snapshot publishes the whole tree: a first-time
        # backfill, sent in the bulk lane (docs/lanes.md); later polls are edits
        self.lane: Lane = BULK if not self.snapshot else INTERACTIVE

    # ----------------------------------------------------------------- state file

    def _identity(self) -> dict[str, str]:
        return {
            "root": str(self.source.root),
            "source": self.source.name,
            "tenant_id": self.source.tenant_id,
        }

    def _load_state(self) -> dict[str, SnapEntry]:
        if self.state_file is None or not self.state_file.exists():
            return {}
        try:
            raw = json.loads(self.state_file.read_text(encoding="utf-8"))
            if raw.get("version") != _STATE_VERSION or raw.get("identity") != self._identity():
                self.log.warning("state file belongs to another source; starting fresh")
                return {}
            return {rel: SnapEntry(**entry) for rel, entry in raw["entries"].items()}
        except (OSError, ValueError, TypeError, KeyError):
            self.log.warning("state file unreadable; starting fresh")
            return {}

    def _save_state(self) -> None:
        if self.state_file is None:
            return
        payload: dict[str, Any] = {
            "version": _STATE_VERSION,
            "identity": self._identity(),
            "entries": {rel: vars(e) for rel, e in sorted(self.snapshot.items())},
        }
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_name(self.state_file.name + ".tmp")
        tmp.write_text(json.dumps(payload), encoding="utf-8")
        os.replace(tmp, self.state_file)

    # ----------------------------------------------------------------- polling

    async def _publish(self, event: EventBase, kind: ChangeKind, counts: Counter[str]) -> None:
        await self.sink.publish(Topics.SOURCE_CHANGES.value, with_lane(event, self.lane))
        FS_CHANGES.labels(kind.value).inc()
        counts[kind.value] += 1

    async def _apply(self, change: FsChange, counts: Counter[str]) -> SnapEntry | None:
        """Publish one change; the snapshot entry to keep (None: forget the file)."""
        src = self.source
        if change.kind is ChangeKind.DELETE:
            assert change.prev is not None
            seq = change.prev.source_seq
            await self._publish(
                src.delete_event(src.document_id(change.rel), seq), change.kind, counts
            )
            return None
        doc = change.doc
        assert doc is not None
        if change.kind is ChangeKind.ACL:
            await self._publish(src.acl_event(doc), change.kind, counts)
            return SnapEntry.of(doc)
        data = await asyncio.to_thread(src.read, doc)
        if data is None:  # changed while being read: the next poll sees it again
            counts["unsettled"] += 1
            FS_SKIPPED.labels("unsettled").inc()
            return change.prev
        await self._publish(src.upsert_event_for(doc, data), change.kind, counts)
        return SnapEntry.of(doc)

    async def poll_once(self) -> Counter[str]:
        """One scan + publish. Counts per change kind; a broker outage stops the poll
        early and keeps the unpublished changes for the next one."""
        scan = await asyncio.to_thread(self.source.scan)
        for reason, n in scan.skipped.items():
            FS_SKIPPED.labels(reason).inc(n)
        for msg in scan.errors[:20]:
            self.log.warning("skipped file", extra={"fields": {"problem": msg}})
        self._note_no_readers(scan)
        changes, quiet = diff(self.snapshot, scan)
        counts: Counter[str] = Counter()
        new_snapshot = dict(quiet)
        try:
            for i, change in enumerate(changes):
                try:
                    entry = await self._apply(change, counts)
                except BackendUnavailable:
                    for rest in changes[i:]:  # keep what was last published for the rest
                        if rest.prev is not None:
                            new_snapshot[rest.rel] = rest.prev
                    raise
                if entry is not None:
                    new_snapshot[change.rel] = entry
        finally:
            self.snapshot = new_snapshot
            self._save_state()
            if self.snapshot:
                self.lane = INTERACTIVE
        if changes:
            self.log.info("published", extra={"fields": dict(counts)})
        return counts

    def _note_no_readers(self, scan: ScanResult) -> None:
        found = sorted(d.document_id for d in scan.docs.values() if not d.meta.acl_groups)
        if found and found != self.no_readers:
            self.log.warning(
                "documents with no readers (no acl_groups): add a _policy.yaml or --default-groups",
                extra={"fields": {"no_readers": len(found), "documents": found[:20]}},
            )
        self.no_readers = found

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until ``stop`` is set; broker outages are logged and retried next poll."""
        while not stop.is_set():
            try:
                await self.poll_once()
            except BackendUnavailable as exc:
                self.log.warning(
                    "broker unavailable; retrying", extra={"fields": {"error": str(exc)}}
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval_s)
