"""Sync planning: what a source vs Postgres comparison re-emits, deletes or leaves alone."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ragline.connector.intake import StoredState
from ragline.connector.source import SourceItem
from ragline.connector.sync import SyncAction, build_plan, classify, execute, to_delete
from ragline.errors import ConfigError
from ragline.events import DocumentMeta, EventBase, SourceDelete, SourceUpsert

A = SyncAction


def item(doc: str = "fs:a", seq: int = 10, mh: str = "m1", available: bool = True) -> SourceItem:
    return SourceItem(
        document_id=doc, source_seq=seq, meta_hash=mh, handle=doc, available=available
    )


def st(**kw: object) -> StoredState:
    base: dict[str, object] = {
        "source_seq": 10,
        "acl_seq": 10,
        "content_hash": "c1",
        "meta_hash": "m1",
        "status": "indexed",
    }
    base.update(kw)
    return StoredState(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stored", "it", "expected"),
    [
        (None, item(), A.MISSING),
        (st(), item(), A.VERIFY),
        (st(source_seq=9), item(), A.STALE),
        (st(meta_hash="m0"), item(), A.STALE),
        (st(source_seq=11, meta_hash="m0"), item(), A.SHADOWED),  # source went back in time
        (st(status="deleted", content_hash=None), item(), A.MISSING),
        (st(status="deleted", source_seq=11), item(), A.SHADOWED),  # a newer delete
        # accepted before the broker was lost, never indexed
        (StoredState(pending_seq=10, pending_status="accepted"), item(), A.MISSING),
        (StoredState(pending_seq=10, pending_status="quarantined"), item(), A.QUARANTINED),
        (StoredState(pending_seq=9, pending_status="quarantined"), item(), A.MISSING),
        (st(pending_seq=12, pending_status="deleted"), item(), A.SHADOWED),
        (st(), item(available=False), A.HELD),
        # a newer version accepted but lost: documents still holds the older one
        (st(source_seq=8, pending_seq=10, pending_status="accepted"), item(), A.STALE),
    ],
)
def test_classify(stored: StoredState | None, it: SourceItem, expected: SyncAction) -> None:
    assert classify(it, stored) is expected


def test_retry_quarantined() -> None:
    q = StoredState(pending_seq=10, pending_status="quarantined")
    assert classify(item(), q, retry_quarantined=True) is A.MISSING


def test_to_delete_only_live_documents_the_source_lost() -> None:
    stored = {
        "fs:kept": st(),
        "fs:gone": st(),
        "fs:tombstone": st(status="deleted"),
        "fs:lost-in-flight": StoredState(pending_seq=3, pending_status="accepted"),
        "fs:quarantined": StoredState(pending_seq=3, pending_status="quarantined"),
        "fs:deleted-status": StoredState(pending_seq=3, pending_status="deleted"),
    }
    assert to_delete({"fs:kept"}, stored) == ["fs:gone", "fs:lost-in-flight", "fs:quarantined"]


class FakeSource:
    name = "fs"
    tenant_id = "acme"

    def __init__(self, items: list[SourceItem], hashes: dict[str, str | None]) -> None:
        self._items = items
        self.hashes = hashes

    async def items(self) -> AsyncIterator[SourceItem]:
        for i in self._items:
            yield i

    async def content_hash(self, item: SourceItem) -> str | None:
        return self.hashes.get(item.document_id)

    async def upsert_event(self, item: SourceItem) -> SourceUpsert | None:
        if self.hashes.get(item.document_id) is None:
            return None
        return SourceUpsert(
            tenant_id="acme",
            document_id=item.document_id,
            source_seq=item.source_seq,
            meta=DocumentMeta(),
            content_text="x",
        )

    def delete_event(self, document_id: str, stored_seq: int | None) -> SourceDelete:
        return SourceDelete(
            tenant_id="acme", document_id=document_id, source_seq=(stored_seq or 0) + 1
        )

    def owns(self, uri: str | None) -> bool:
        return True


class Sink:
    def __init__(self) -> None:
        self.events: list[EventBase] = []

    async def publish(self, topic: str, event: EventBase) -> None:
        assert topic == "source.changes"
        self.events.append(event)


async def test_plan_and_execute() -> None:
    src = FakeSource(
        [item("fs:same"), item("fs:edited"), item("fs:new"), item("fs:busy", available=False)],
        {"fs:same": "c1", "fs:edited": "c2", "fs:new": "c3"},
    )
    stored = {
        "fs:same": st(),
        "fs:edited": st(),  # same seq + meta: only a checksum notices the new bytes
        "fs:busy": st(),
        "fs:removed": st(source_seq=7, acl_seq=20),
    }
    quick = await build_plan(src, stored, progress=False)
    assert quick.counts == {"ok": 2, "missing": 1, "held": 1, "delete": 1}
    plan = await build_plan(src, stored, checksum=True, progress=False)
    assert plan.counts == {"ok": 1, "stale": 1, "missing": 1, "held": 1, "delete": 1}
    assert [i.document_id for _, i in plan.emit] == ["fs:edited", "fs:new"]
    assert plan.deletes == ["fs:removed"]  # never the held one
    sink = Sink()
    done = await execute(plan, src, sink, stored=stored, progress=False)
    assert done == {"stale": 1, "missing": 1, "delete": 1}
    delete = sink.events[-1]
    assert isinstance(delete, SourceDelete) and delete.source_seq == 21  # above the acl seq too
    assert {e.priority for e in sink.events} == {"bulk"}  # a sync is bulk work
    sink = Sink()
    await execute(plan, src, sink, stored=stored, progress=False, lane="interactive")
    assert {e.priority for e in sink.events} == {"interactive"}


async def test_empty_source_refuses_to_delete_everything() -> None:
    stored = {"fs:a": st(), "fs:b": st()}
    with pytest.raises(ConfigError, match="allow-empty"):
        await build_plan(FakeSource([], {}), stored, progress=False)
    plan = await build_plan(FakeSource([], {}), stored, allow_empty=True, progress=False)
    assert plan.deletes == ["fs:a", "fs:b"]


async def test_unreadable_items_are_counted_not_published() -> None:
    src = FakeSource([item("fs:new")], {"fs:new": None})
    plan = await build_plan(src, {}, progress=False)
    sink = Sink()
    assert await execute(plan, src, sink, stored={}, progress=False) == {"unreadable": 1}
    assert sink.events == []
