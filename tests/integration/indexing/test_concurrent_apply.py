"""The indexer writes the plain upserts of a batch side by side (``apply_concurrency``
documents at a time, each in its own transaction) and, after them and one after another,
every event whose outcome may depend on another document of the batch: deletes, ACL
changes and supersession. These tests look for the counter-example: a supersession pair
in one batch, in either order, a delete after an upsert of the same document, a stored
superseded document re-upserted, and check the writes really overlapped."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from indexing_helpers import indexed

from ragline.events import DocControl
from ragline.indexing.samples import embedded_event

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def doc(tenant: str, document_id: str, seq: int = 1, **kw: Any) -> Any:
    return embedded_event(
        tenant_id=tenant,
        document_id=document_id,
        source_seq=seq,
        texts=[f"{document_id} v{seq} text"],
        acl_groups=("all",),
        **kw,
    )


async def mark(admin: Any, tenant: str, d: str) -> Any:
    cur = await admin.execute(
        "SELECT status, superseded, superseded_by FROM documents"
        " WHERE tenant_id = %s AND document_id = %s",
        (tenant, d),
    )
    return await cur.fetchone()


class Recorder:
    """Wraps ``IndexWriter.apply``: the order events started in and the most in flight."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.started: list[str] = []
        self.now = 0
        self.most = 0

    async def __call__(self, conn: Any, event: Any) -> Any:
        self.started.append(event.document_id)
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.02)  # hold the slot: overlap is visible even when fast
            return await self.inner(conn, event)
        finally:
            self.now -= 1


@pytest.fixture
def recorder(indexer: Any, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    rec = Recorder(indexer.writer.apply)
    monkeypatch.setattr(indexer.writer, "apply", rec)
    return rec


async def test_plain_upserts_overlap_and_supersession_waits_for_them(
    apply: Any, admin: Any, tenant: str, recorder: Recorder
) -> None:
    plain = [doc(tenant, f"wiki:p{i}") for i in range(8)]
    # the successor first in the batch, its target after: the mark must still be set
    successor = doc(tenant, "policy:v2", supersedes=["policy:v1"])
    target = doc(tenant, "policy:v1")
    results = await apply([successor, *plain, target])
    for r in results:
        indexed(r)
    assert recorder.most >= 2  # the plain upserts ran side by side
    # the successor (lists supersedes) ran after every other document of the batch
    assert recorder.started[-1] == "policy:v2"
    assert await mark(admin, tenant, "policy:v1") == ("indexed", True, "policy:v2")
    assert await mark(admin, tenant, "policy:v2") == ("indexed", False, None)


async def test_target_first_then_successor_in_one_batch(
    apply: Any, admin: Any, tenant: str, recorder: Recorder
) -> None:
    results = await apply(
        [doc(tenant, "policy:a"), doc(tenant, "policy:b", supersedes=["policy:a"])]
    )
    for r in results:
        indexed(r)
    assert await mark(admin, tenant, "policy:a") == ("indexed", True, "policy:b")


async def test_a_superseded_document_rewritten_beside_its_successor_dropping_the_link(
    apply: Any, admin: Any, tenant: str, recorder: Recorder
) -> None:
    for r in await apply(
        [doc(tenant, "policy:old"), doc(tenant, "policy:new", supersedes=["policy:old"])]
    ):
        indexed(r)
    assert await mark(admin, tenant, "policy:old") == ("indexed", True, "policy:new")
    # one batch: the target edited, the successor's new version no longer supersedes it.
    # Neither new event lists supersedes: the stored rows send both to the ordered phase
    results = await apply([doc(tenant, "policy:old", 2), doc(tenant, "policy:new", 2)])
    for r in results:
        indexed(r)
    assert await mark(admin, tenant, "policy:old") == ("indexed", False, None)
    assert recorder.most == 1  # both ran one after another


async def test_an_upsert_and_a_delete_of_one_document_keep_their_order(
    apply: Any, admin: Any, tenant: str, recorder: Recorder
) -> None:
    neighbours = [doc(tenant, f"wiki:n{i}") for i in range(4)]
    gone = DocControl(tenant_id=tenant, document_id="wiki:gone", source_seq=2, action="delete")
    results = await apply([doc(tenant, "wiki:gone"), *neighbours, gone])
    for r in results:
        indexed(r)
    assert (await mark(admin, tenant, "wiki:gone"))[0] == "deleted"
    for n in neighbours:
        assert (await mark(admin, tenant, n.document_id))[0] == "indexed"
    # the document with a control event went wholly to the ordered phase, in batch order
    assert [d for d in recorder.started if d == "wiki:gone"] == ["wiki:gone", "wiki:gone"]
    assert recorder.started[-2:] == ["wiki:gone", "wiki:gone"]


async def test_one_at_a_time_when_configured(
    apply: Any, indexer: Any, tenant: str, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        indexer, "config", indexer.config.model_copy(update={"apply_concurrency": 1})
    )
    for r in await apply([doc(tenant, f"wiki:s{i}") for i in range(4)]):
        indexed(r)
    assert recorder.most == 1
