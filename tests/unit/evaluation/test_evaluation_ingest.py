"""Ingest: the events the harness publishes and when it considers a document done."""

from __future__ import annotations

from ragline.evaluation.datasets import AfterIngest, EvalDataset
from ragline.evaluation.ingest import IngestResult, _done, _Expect, _follow_up, _upsert
from ragline.events import SourceAclChange, SourceDelete, SourceUpsert, input_adapter


def row(status: str, chash: str | None, acl: list[str], seq: int = 5, acl_seq: int = 5) -> tuple:  # type: ignore[type-arg]
    return ("acme", "w:a", status, chash, acl, seq, acl_seq)


def test_upsert_event_carries_content_hash_meta_and_seq(tiny: EvalDataset) -> None:
    doc = tiny.documents[0]
    ev = _upsert(doc, 1234)
    assert isinstance(ev, SourceUpsert)
    assert (ev.tenant_id, ev.document_id, ev.source_seq) == ("acme", "w:a", 1234)
    assert ev.content_hash == doc.content_hash and ev.content_text == doc.content_text
    assert ev.meta == doc.meta
    # it validates against the topic contract the connector consumes
    raw = ev.model_dump_json()
    assert input_adapter("source.changes").validate_json(raw) == ev


def test_follow_up_events() -> None:
    d = _follow_up(AfterIngest(action="delete", tenant="acme", document_id="w:a"), 9)
    assert isinstance(d, SourceDelete) and d.source_seq == 9
    a = _follow_up(
        AfterIngest(action="acl", tenant="acme", document_id="w:a", acl_groups=("z", "finance")), 9
    )
    assert isinstance(a, SourceAclChange) and a.acl_groups == ("finance", "z")


def test_upsert_done_needs_indexed_hash_and_acl() -> None:
    exp = _Expect(kind="upsert", seq=5, content_hash="h1", acl_groups=("finance", "staff"))
    assert _done(exp, row("indexed", "h1", ["staff", "finance"]))
    assert not _done(exp, None)
    assert not _done(exp, row("indexed", "h0", ["staff", "finance"]))  # older content
    assert not _done(exp, row("deleted", "h1", ["staff", "finance"]))
    assert not _done(exp, row("indexed", "h1", ["finance"]))  # ACL not restored yet
    # unchanged content dropped by the connector: an older seq is still done
    assert _done(exp, row("indexed", "h1", ["finance", "staff"], seq=1, acl_seq=1))


def test_delete_and_acl_done() -> None:
    de = _Expect(kind="delete", seq=10)
    assert _done(de, row("deleted", None, [], seq=10))
    assert not _done(de, row("deleted", None, [], seq=3))  # a previous run's tombstone
    assert not _done(de, row("indexed", "h", ["staff"], seq=10))
    assert _done(de, None)
    ae = _Expect(kind="acl", seq=10, acl_groups=("finance",))
    assert _done(ae, row("indexed", "h", ["finance"], acl_seq=10))
    assert not _done(ae, row("indexed", "h", ["finance"], acl_seq=9))
    assert not _done(ae, row("indexed", "h", ["finance", "staff"], acl_seq=10))


def test_result_summary() -> None:
    r = IngestResult(documents=10, indexed=9, quarantined={"w:x": "secret_found"})
    r.indexed_s = 4.0
    assert r.docs_per_s == 2.5
    d = r.as_dict()
    assert d["quarantined"] == 1 and d["docs_per_s"] == 2.5
    assert IngestResult(documents=0).docs_per_s is None


async def test_publish_bounds_the_sends_in_flight(tiny: EvalDataset) -> None:
    import asyncio

    from ragline.evaluation.ingest import _publish

    sent: list[tuple[str, str]] = []
    state = {"now": 0, "max": 0}

    class FakePublisher:
        def __init__(self, settings: object) -> None:
            pass

        async def __aenter__(self) -> FakePublisher:
            return self

        async def __aexit__(self, *exc: object) -> None:
            return None

        async def publish(self, topic: str, ev: SourceUpsert) -> None:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
            await asyncio.sleep(0.001)
            state["now"] -= 1
            sent.append((topic, ev.document_id))

    events = [_upsert(d, 1) for d in tiny.documents] * 5
    await _publish(None, FakePublisher, events, "p", False, in_flight=4)  # type: ignore[arg-type]
    assert len(sent) == 15 and {t for t, _ in sent} == {"source.changes"}
    assert state["max"] == 4
    sent.clear()
    await _publish(None, FakePublisher, events[:3], "p", False)  # type: ignore[arg-type]
    assert [d for _, d in sent] == ["w:a", "w:b", "w:secret"]  # sequential keeps order
