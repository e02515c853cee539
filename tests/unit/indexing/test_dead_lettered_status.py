"""Every document that entered gets a terminal status (issue 12, defect 4): a content
event a stage dead-letters for any reason also publishes doc.quarantined
('dead_lettered'), so the indexer records it instead of leaving 'accepted' forever. The
DLQ record keeps the original error class."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from ragline.errors import PermanentError, QuarantineError, TransientError
from ragline.events import DocFetched, DocQuarantined, DocumentMeta, SourceDelete, Topics
from ragline.runtime.consumer import Record, StageRunner


class _Stage:
    name = "parser"


def _runner() -> tuple[StageRunner, list[Any], list[BaseException]]:
    runner = StageRunner.__new__(StageRunner)
    runner.stage = _Stage()  # type: ignore[assignment]
    published: list[Any] = []
    dead: list[BaseException] = []

    async def publish(rec: Record, event: Any, out: Any) -> None:
        published.append(out)

    async def dead_letter(rec: Record, exc: BaseException, **kw: Any) -> None:
        dead.append(exc)

    runner._publish_output = publish  # type: ignore[method-assign]
    runner._dead_letter = dead_letter  # type: ignore[method-assign]
    return runner, published, dead


def _rec(topic: str) -> Record:
    return Record(topic=topic, partition=0, offset=1, key=b"k", value=b"{}", headers={})


FETCHED = DocFetched(
    tenant_id="acme",
    document_id="fs:a.md",
    source_seq=3,
    content_hash="0" * 64,
    meta=DocumentMeta(acl_groups=("eng",)),
    content_b64=base64.b64encode(b"x").decode(),
    size_bytes=1,
)


@pytest.mark.parametrize("exc", [PermanentError("bug"), TransientError("down"), KeyError("x")])
def test_a_dead_lettered_version_is_quarantined_with_a_reason(exc: BaseException) -> None:
    runner, published, dead = _runner()
    asyncio.run(runner._fail(_rec(Topics.DOC_FETCHED.value), FETCHED, exc, 3))
    [out] = published
    assert out.topic == Topics.DOC_QUARANTINED
    q = out.event
    assert isinstance(q, DocQuarantined) and q.reason_code == "dead_lettered"
    assert (q.document_id, q.source_seq, q.stage) == ("fs:a.md", 3, "parser")
    assert type(exc).__name__ in q.reason and "3 attempt" in q.reason
    assert dead == [exc]  # the DLQ record names the real error


def test_a_quarantine_stays_a_quarantine_and_source_changes_get_no_status() -> None:
    runner, published, dead = _runner()
    q = QuarantineError("oversize_document", "too big")
    asyncio.run(runner._fail(_rec(Topics.DOC_FETCHED.value), FETCHED, q, 1))
    assert [o.event.reason_code for o in published] == ["oversize_document"] and dead == [q]
    runner, published, dead = _runner()
    delete = SourceDelete(tenant_id="acme", document_id="fs:a.md", source_seq=1)
    asyncio.run(runner._fail(_rec(Topics.SOURCE_CHANGES.value), delete, PermanentError("x"), 1))
    assert published == [] and len(dead) == 1
