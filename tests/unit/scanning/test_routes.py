"""No route reaches the embedder or an index without passing the scanner."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ragline.events import DocControl, Topics
from ragline.runtime.topology import TOPOLOGY
from ragline.scanning.scanner import Scanner

from .helpers import make_event

TEXT_FREE_CONTROL_FIELDS = {
    "event_id", "event_type", "schema_version", "occurred_at", "tenant_id", "document_id",
    "content_hash", "source_seq", "traceparent", "action", "acl", "priority", "seq_epoch",
}  # fmt: skip


def _paths(start: str, goal: str) -> list[list[str]]:
    """Every service path from topic ``start`` to a service consuming ``goal``."""
    out: list[list[str]] = []

    def walk(topic: str, path: list[str]) -> None:
        for svc in TOPOLOGY:
            if topic in svc.consumes and svc.name not in path:
                nxt = [*path, svc.name]
                if svc.name == goal:
                    out.append(nxt)
                for t in svc.produces:
                    walk(t, nxt)

    walk(start, [])
    return out


@pytest.mark.parametrize("goal", ["embedder", "chunker", "enricher"])
def test_every_text_path_passes_the_scanner(goal: str) -> None:
    paths = _paths(Topics.SOURCE_CHANGES, goal)
    assert paths, goal
    for path in paths:
        assert "scanner" in path[: path.index(goal)], path


def test_the_indexers_other_inputs_carry_no_document_text() -> None:
    """doc.control skips the scanner (deletes/ACL fast path): it must stay text-free."""
    indexer = next(s for s in TOPOLOGY if s.name == "indexer")
    bypass = set(indexer.consumes) - {Topics.DOC_EMBEDDED, Topics.DOC_QUARANTINED}
    assert bypass == {Topics.DOC_CONTROL}
    assert set(DocControl.model_fields) == TEXT_FREE_CONTROL_FIELDS
    # the chunker reads only scanned documents
    chunker = next(s for s in TOPOLOGY if s.name == "chunker")
    assert chunker.consumes == (Topics.DOC_SCANNED,)


@pytest.mark.parametrize("change", ["content", "metadata", "resync"])
async def test_every_change_kind_is_scanned_in_full(
    make_scanner: Callable[..., Scanner], change: str
) -> None:
    ev = make_event(["key AKIAPTGZ4JFEBZ9SDO78"], title="mail ops@acme-corp.com", change=change)
    out = await make_scanner().scan(ev)
    assert out.change == change
    dumped = out.model_dump_json()
    assert "AKIAPTGZ4JFEBZ9SDO78" not in dumped and "ops@acme-corp.com" not in dumped
