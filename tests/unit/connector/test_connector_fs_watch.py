"""The polling watcher: diffs between scans become upserts, deletes and ACL-only changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragline.connector.fs_source import FilesystemSource, FsSourceConfig
from ragline.connector.fs_watch import FsWatcher
from ragline.errors import BackendUnavailable
from ragline.events import EventBase, SourceAclChange, SourceDelete, SourceUpsert


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, EventBase]] = []
        self.fail_after: int | None = None

    async def publish(self, topic: str, event: EventBase) -> None:
        if self.fail_after is not None and len(self.events) >= self.fail_after:
            raise BackendUnavailable("broker down")
        self.events.append((topic, event))

    def take(self) -> list[EventBase]:
        out = [e for _, e in self.events]
        self.events.clear()
        return out


_T = [1_700_000_000_000_000_000]


def touch(path: Path, text: str | None = None) -> None:
    if text is not None:
        path.write_text(text)
    _T[0] += 1_000_000_000
    os.utime(path, ns=(_T[0], _T[0]))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "docs"
    r.mkdir()
    touch(r / "_policy.yaml", "acl_groups: [eng]\n")
    touch(r / "a.md", "# A\n")
    touch(r / "b.md", "# B\n")
    return r


def watcher(root: Path, sink: Sink, state: Path | None = None) -> FsWatcher:
    src = FilesystemSource(FsSourceConfig(root=root, source="docs", tenant_id="acme"))
    return FsWatcher(src, sink, state_file=state)


async def test_first_poll_upserts_everything_then_nothing(root: Path) -> None:
    sink = Sink()
    w = watcher(root, sink)
    await w.poll_once()
    assert {topic for topic, _ in sink.events} == {"source.changes"}
    events = sink.take()
    assert sorted(e.document_id for e in events) == ["docs:a.md", "docs:b.md"]
    assert all(isinstance(e, SourceUpsert) for e in events)
    assert {e.priority for e in events} == {"bulk"}  # a first-time backfill
    await w.poll_once()
    assert sink.take() == []
    touch(root / "a.md", "# A, edited\n")
    await w.poll_once()
    assert [e.priority for e in sink.take()] == ["interactive"]  # an edit


async def test_modify_remove_and_acl_only(root: Path) -> None:
    sink = Sink()
    w = watcher(root, sink)
    await w.poll_once()
    sink.take()
    touch(root / "a.md", "# A, edited\n")
    (root / "b.md").unlink()
    await w.poll_once()
    events = {type(e).__name__: e for e in sink.take()}
    assert set(events) == {"SourceUpsert", "SourceDelete"}
    assert events["SourceUpsert"].document_id == "docs:a.md"
    delete = events["SourceDelete"]
    assert isinstance(delete, SourceDelete) and delete.document_id == "docs:b.md"
    # a sidecar that changes only the ACL: fast path, no bytes
    touch(root / "a.md.meta.yaml", "acl_groups: [eng-leads]\n")
    await w.poll_once()
    [acl] = sink.take()
    assert isinstance(acl, SourceAclChange) and acl.acl_groups == ("eng-leads",)
    # a sidecar change beyond the ACL re-sends the document (metadata-only path downstream)
    touch(root / "a.md.meta.yaml", "acl_groups: [eng-leads]\ntitle: Alpha\n")
    await w.poll_once()
    [meta] = sink.take()
    assert isinstance(meta, SourceUpsert) and meta.meta.title == "Alpha"
    assert meta.source_seq > acl.source_seq


async def test_policy_acl_change_reaches_every_file_below(root: Path) -> None:
    sink = Sink()
    w = watcher(root, sink)
    await w.poll_once()
    sink.take()
    touch(root / "_policy.yaml", "acl_groups: [eng, support]\n")
    await w.poll_once()
    events = sink.take()
    assert len(events) == 2 and all(isinstance(e, SourceAclChange) for e in events)
    assert all(e.acl_groups == ("eng", "support") for e in events)  # type: ignore[attr-defined]


async def test_held_files_are_neither_deleted_nor_resent(root: Path) -> None:
    sink = Sink()
    w = watcher(root, sink)
    await w.poll_once()
    sink.take()
    touch(root / "a.md.meta.yaml", "classification: [not, valid]\n")
    await w.poll_once()
    assert sink.take() == []
    assert "a.md" in w.snapshot
    touch(root / "a.md.meta.yaml", "classification: restricted\n")
    await w.poll_once()
    [acl] = sink.take()
    assert isinstance(acl, SourceAclChange) and acl.classification == "restricted"


async def test_state_file_makes_restarts_incremental(root: Path, tmp_path: Path) -> None:
    state = tmp_path / "state" / "watch.json"
    sink = Sink()
    await watcher(root, sink, state).poll_once()
    assert len(sink.take()) == 2
    (root / "b.md").unlink()
    touch(root / "c.md", "# C\n")
    await watcher(root, sink, state).poll_once()  # a new process
    events = sorted(sink.take(), key=lambda e: e.document_id)
    assert {e.priority for e in events} == {"interactive"}  # not a backfill: it has state
    assert [(type(e).__name__, e.document_id) for e in events] == [
        ("SourceDelete", "docs:b.md"),
        ("SourceUpsert", "docs:c.md"),
    ]
    other = FilesystemSource(FsSourceConfig(root=root, source="other", tenant_id="acme"))
    assert FsWatcher(other, sink, state_file=state).snapshot == {}  # not its state


async def test_broker_outage_keeps_unpublished_changes_for_the_next_poll(root: Path) -> None:
    sink = Sink()
    sink.fail_after = 1
    w = watcher(root, sink)
    with pytest.raises(BackendUnavailable):
        await w.poll_once()
    assert len(sink.take()) == 1
    sink.fail_after = None
    await w.poll_once()
    assert len(sink.take()) == 1  # the other file, not both again
    await w.poll_once()
    assert sink.take() == []
