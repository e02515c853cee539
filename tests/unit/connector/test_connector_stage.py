"""The connector Stage's handle(): outputs per decision, status recording, metadata."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from ragline.config import Settings
from ragline.connector.fetch import ContentFetcher
from ragline.connector.intake import Accepted, StatedAcl, StoredState
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage, effective_meta
from ragline.connector.state import ChangedMeanwhile
from ragline.errors import BackendUnavailable, PermanentError, QuarantineError, TransientError
from ragline.events import (
    ContentRef,
    DocControl,
    DocFetched,
    DocumentMeta,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
)
from ragline.hashing import content_hash, meta_hash
from ragline.runtime.lanes import demote
from ragline.runtime.stage import StageContext


class MemoryState:
    """Stands in for the Postgres-backed StateStore in pure handler tests."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], StoredState] = {}
        self.accepted: list[tuple[str, int]] = []
        self.quarantined: list[tuple[str, int, str]] = []  # recorded at intake
        self.restated: dict[tuple[str, str], int] = {}  # unchanged at a newer seq
        self.lookups = 0
        self.down = False
        self.newer_meanwhile: set[str] = set()  # documents a concurrent writer moved on
        self.poison: set[str] = set()  # documents whose status write Postgres refuses
        self.acls: dict[tuple[str, str], tuple[tuple[str, ...], int]] = {}
        self.refuse_restated = False
        self.logged: dict[Key, list[Accepted]] = {}  # the row's log of accepted changes

    def _log(self, log: dict[Key, list[Accepted]] | None, keys: Iterable[Key]) -> None:
        for key in keys:
            self.logged.setdefault(key, []).extend((log or {}).get(key, []))

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def get(self, tenant_id: str, document_id: str) -> StoredState | None:
        return self.rows.get((tenant_id, document_id))

    async def get_many(self, keys: Iterable[Key]) -> dict[Key, StoredState]:
        if self.down:
            raise BackendUnavailable("postgres down")
        self.lookups += 1
        return {k: self.rows[k] for k in keys if k in self.rows}

    async def record_restated(self, restated: dict[Key, tuple[StatedAcl, int]]) -> dict[Key, Any]:
        if self.refuse_restated:  # an ACL change accepted meanwhile (the other lane)
            return {k: ChangedMeanwhile("an ACL change was accepted meanwhile") for k in restated}
        for key, (statement, _) in restated.items():
            self.restated[key] = statement.seq
            self.rows[key] = dataclasses.replace(
                self.rows[key], pending_seq=statement.seq
            ).with_statement(statement)
        return {}

    async def record_acl_stated(
        self,
        stated: dict[Key, tuple[StatedAcl, int]],
        *,
        log: dict[Key, list[Accepted]] | None = None,
    ) -> dict[Key, bool | Exception]:
        out: dict[Key, bool | Exception] = {}
        for key, (statement, _) in stated.items():
            old = self.rows.get(key)
            if old is None or old.pending_status is None:
                out[key] = True
            elif old.stated_acl is not None and old.stated_acl.key > statement.key:
                out[key] = False
            else:
                self.rows[key] = old.with_statement(statement)
                out[key] = True
        self._log(log, [k for k, ok in out.items() if ok is True])
        return out

    async def record_accepted_each(
        self,
        accepted: dict[Key, tuple[int, str]],
        *,
        acls: dict[Key, tuple[tuple[str, ...], int]] | None = None,
        quarantined: dict[Key, tuple[str, str]] | None = None,
        stated: dict[Key, str] | None = None,
        epochs: dict[Key, int] | None = None,
        log: dict[Key, list[Accepted]] | None = None,
    ) -> dict[Key, bool | Exception]:
        self.acls.update(acls or {})
        written: dict[Key, bool | Exception] = {}
        for key, (seq, _) in accepted.items():
            old = self.rows.get(key)
            if key[1] in self.poison:
                written[key] = PermanentError("postgres DataError (22021)")
                continue
            if key[1] in self.newer_meanwhile or (old is not None and (old.pending_seq or 0) > seq):
                written[key] = False
                continue
            if key in (quarantined or {}):
                self.quarantined.append((key[1], seq, (quarantined or {})[key][0]))
            else:
                self.accepted.append((key[1], seq))
            written[key] = True
        self._log(log, [k for k, ok in written.items() if ok is True])
        return written


Key = tuple[str, str]
META = DocumentMeta(acl_groups=("eng",), title="Runbook")
TEXT = "# Runbook\n\nRestart the service.\n"


@pytest.fixture
async def stage(tmp_path: Path) -> AsyncIterator[ConnectorStage]:
    cfg = ConnectorSettings(max_document_bytes=10_000, allowed_roots=(tmp_path,))
    stage = ConnectorStage(
        Settings(),
        cfg,
        state=MemoryState(),  # type: ignore[arg-type]
        fetcher=ContentFetcher(cfg),
    )
    await stage.start()
    yield stage
    await stage.stop()


CTX = StageContext(settings=Settings(), logger=logging.getLogger("test"))


def upsert(seq: int, text: str = TEXT, meta: DocumentMeta = META) -> SourceUpsert:
    return SourceUpsert(
        tenant_id="acme", document_id="wiki:rb", source_seq=seq, meta=meta, content_text=text
    )


def indexed(stage: ConnectorStage, seq: int, text: str = TEXT, meta: DocumentMeta = META) -> None:
    stage.state.rows[("acme", "wiki:rb")] = StoredState(  # type: ignore[attr-defined]
        source_seq=seq,
        acl_seq=seq,
        content_hash=content_hash(text.encode()),
        meta_hash=meta_hash(meta),
        status="indexed",
        pending_seq=seq,
        pending_status="indexed",
    )


async def test_new_document_goes_to_doc_fetched(stage: ConnectorStage) -> None:
    [out] = await stage.handle(upsert(1), CTX)
    assert out.topic == "doc.fetched" and isinstance(out.event, DocFetched)
    assert out.event.change == "content" and out.event.content_hash == content_hash(TEXT.encode())
    assert stage.state.accepted == [("wiki:rb", 1)]  # type: ignore[attr-defined]


async def test_unchanged_metadata_and_stale(stage: ConnectorStage) -> None:
    indexed(stage, 5)
    # trailing whitespace and CRLF normalize away: same content hash
    assert await stage.handle(upsert(6, TEXT.replace("\n", "  \r\n")), CTX) == []
    [out] = await stage.handle(upsert(7, meta=META.model_copy(update={"title": "New"})), CTX)
    assert isinstance(out.event, DocFetched) and out.event.change == "metadata"
    assert await stage.handle(upsert(4, "older text"), CTX) == []
    assert stage.state.accepted == [("wiki:rb", 7)]  # type: ignore[attr-defined]


async def test_control_fast_path(stage: ConnectorStage) -> None:
    indexed(stage, 5)
    [d] = await stage.handle(
        SourceDelete(tenant_id="acme", document_id="wiki:rb", source_seq=6), CTX
    )
    assert (
        d.topic == "doc.control" and isinstance(d.event, DocControl) and d.event.action == "delete"
    )
    acl = SourceAclChange(
        tenant_id="acme", document_id="wiki:rb", source_seq=6, acl_groups=("ops",)
    )
    [a] = await stage.handle(acl, CTX)
    assert isinstance(a.event, DocControl) and a.event.acl is not None
    old = SourceAclChange(tenant_id="acme", document_id="wiki:rb", source_seq=4, acl_groups=("x",))
    assert await stage.handle(old, CTX) == []


async def test_oversize_and_disallowed_refs_quarantine(
    stage: ConnectorStage, tmp_path: Path
) -> None:
    with pytest.raises(QuarantineError) as info:
        await stage.handle(upsert(1, "x" * 10_001), CTX)
    assert info.value.reason_code == "oversize_document"
    ref = SourceUpsert(
        tenant_id="acme",
        document_id="wiki:rb",
        source_seq=1,
        meta=META,
        content_ref=ContentRef(kind="file", location="/etc/hostname"),
    )
    with pytest.raises(QuarantineError) as info:
        await stage.handle(ref, CTX)
    assert info.value.reason_code == "fetch_path_not_allowed"


async def test_file_ref_gets_a_guessed_mime_type(stage: ConnectorStage, tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(TEXT)
    ref = SourceUpsert(
        tenant_id="acme",
        document_id="wiki:rb",
        source_seq=1,
        meta=META,
        content_ref=ContentRef(kind="file", location=str(tmp_path / "guide.md")),
    )
    assert effective_meta(ref).mime_type == "text/markdown"
    [out] = await stage.handle(ref, CTX)
    assert isinstance(out.event, DocFetched) and out.event.meta.mime_type == "text/markdown"


async def test_source_hash_skips_the_fetch_when_unchanged(stage: ConnectorStage) -> None:
    indexed(stage, 5)
    ref = SourceUpsert(
        tenant_id="acme",
        document_id="wiki:rb",
        source_seq=6,
        meta=META,
        content_hash=content_hash(TEXT.encode()),
        content_ref=ContentRef(kind="http", location="https://not-allowed.example/x"),
    )
    assert await stage.handle(ref, CTX) == []  # decided without touching the network


def test_webhook_only_with_a_secret(stage: ConnectorStage) -> None:
    assert stage.http_app() is None
    cfg = ConnectorSettings(webhook_secret="x")
    assert ConnectorStage(Settings(), cfg, state=MemoryState()).http_app() is not None  # type: ignore[arg-type]


async def test_batch_decides_in_order_with_one_lookup(stage: ConnectorStage) -> None:
    indexed(stage, 5)
    other = SourceUpsert(
        tenant_id="acme", document_id="wiki:other", source_seq=1, meta=META, content_text="x"
    )
    bad = upsert(9, "y" * 10_001)
    batch = [upsert(7, "seven"), upsert(6, "six"), other, bad, upsert(8, "eight"), upsert(10)]
    results = await stage.handle_batch(batch, CTX)
    assert stage.state.lookups == 1  # type: ignore[attr-defined]
    seven, six, oth, quarantined, eight, ten = results
    assert isinstance(seven, list) and len(seven) == 1
    assert six == []  # older than seq 7 earlier in the same batch
    assert isinstance(oth, list) and len(oth) == 1
    assert isinstance(quarantined, QuarantineError)  # fails alone, neighbours go on
    assert eight == []  # older than the quarantined seq 9 (ADR 0008, lifetest F9)
    assert isinstance(ten, list) and len(ten) == 1
    # one status write per document: the newest accepted seq
    assert sorted(stage.state.accepted) == [("wiki:other", 1), ("wiki:rb", 10)]  # type: ignore[attr-defined]
    # the status row gets the source's ACL at the seq it was stated (0007)
    assert stage.state.acls == {  # type: ignore[attr-defined]
        ("acme", "wiki:other"): (("eng",), 1),
        ("acme", "wiki:rb"): (("eng",), 10),
    }


@pytest.mark.parametrize("indexed_before", [False, True])
async def test_a_version_quarantined_at_the_fetch_makes_older_ones_stale(
    stage: ConnectorStage, indexed_before: bool
) -> None:
    """lifetest F9: the quarantine is recorded with the batch (not only when the indexer
    gets doc.quarantined), so an older upsert later in the batch or in a later batch is
    stale, like after any other newer version."""
    if indexed_before:
        indexed(stage, 5)
    narrow = META.model_copy(update={"acl_groups": ("ops",)})
    results = await stage.handle_batch(
        [upsert(9, "x" * 10_001, narrow), upsert(8, "eight"), upsert(7, "x" * 10_001)], CTX
    )
    q9, eight, q7 = results
    assert isinstance(q9, QuarantineError) and q9.reason_code == "oversize_document"
    assert eight == []
    assert q7 == []  # older still: dropped before the fetch
    state = stage.state
    assert state.quarantined == [("wiki:rb", 9, "oversize_document")]  # type: ignore[attr-defined]
    assert state.accepted == []  # type: ignore[attr-defined]
    assert state.acls == {("acme", "wiki:rb"): (("ops",), 9)}  # type: ignore[attr-defined]


async def test_batch_control_then_older_upsert_is_stale(stage: ConnectorStage) -> None:
    indexed(stage, 5)
    delete = SourceDelete(tenant_id="acme", document_id="wiki:rb", source_seq=7)
    [d, up, back] = await stage.handle_batch([delete, upsert(6, "late edit"), upsert(8)], CTX)
    assert isinstance(d, list) and d[0].topic == "doc.control"
    assert up == []
    # the indexed bytes coming back after the (in-flight) delete are not "unchanged"
    assert isinstance(back, list) and isinstance(back[0].event, DocFetched)
    assert back[0].event.change == "content"
    assert stage.state.accepted == [("wiki:rb", 8)]  # type: ignore[attr-defined]


async def test_a_forwarded_delete_is_recorded_as_accepted(stage: ConnectorStage) -> None:
    indexed(stage, 5)
    delete = SourceDelete(tenant_id="acme", document_id="wiki:rb", source_seq=7)
    [out] = await stage.handle(delete, CTX)
    assert isinstance(out.event, DocControl) and out.event.action == "delete"
    assert stage.state.accepted == [("wiki:rb", 7)]  # type: ignore[attr-defined]
    assert stage.state.acls == {}  # type: ignore[attr-defined]  # a delete keeps the stored ACL
    stage.state.newer_meanwhile.add("wiki:rb")  # type: ignore[attr-defined]
    again = SourceDelete(tenant_id="acme", document_id="wiki:rb", source_seq=7)
    assert await stage.handle(again, CTX) == []  # the status moved on: stale


async def test_backend_down_fails_the_batch_and_concurrent_writer_wins(
    stage: ConnectorStage,
) -> None:
    stage.state.down = True  # type: ignore[attr-defined]
    results = await stage.handle_batch([upsert(1), upsert(2)], CTX)
    assert all(isinstance(r, BackendUnavailable) for r in results)
    stage.state.down = False  # type: ignore[attr-defined]
    stage.state.newer_meanwhile.add("wiki:rb")  # type: ignore[attr-defined]
    assert await stage.handle(upsert(3), CTX) == []


async def test_content_only_ever_leaves_towards_the_scanner(stage: ConnectorStage) -> None:
    """Issue 4: no path skips the scanner. Whatever the decision (new, metadata-only,
    re-sent by sync), bytes leave the connector only on doc.fetched (parser -> scanner);
    doc.control (straight to the indexer) never carries text."""
    indexed(stage, 5)
    events = [
        upsert(6),  # unchanged
        upsert(7, meta=META.model_copy(update={"acl_groups": ("ops",)})),  # metadata/ACL only
        upsert(8, "new text"),  # content
        SourceDelete(tenant_id="acme", document_id="wiki:gone", source_seq=1),
        SourceAclChange(tenant_id="acme", document_id="wiki:x", source_seq=1, acl_groups=("a",)),
    ]
    outputs = [o for r in await stage.handle_batch(events, CTX) if isinstance(r, list) for o in r]
    assert {o.topic for o in outputs} == {"doc.fetched", "doc.control"}
    for o in outputs:
        if o.topic == "doc.control":
            assert isinstance(o.event, DocControl)
            assert not ({"content_b64", "content_text", "meta"} & set(type(o.event).model_fields))
        else:
            assert isinstance(o.event, DocFetched) and o.event.change in ("content", "metadata")


async def test_a_heavy_document_travels_on_in_the_bulk_lane(tmp_path: Path) -> None:
    """Issue 18: content over RAGLINE_CONNECTOR_HEAVY_BYTES is demoted to the bulk lane
    (its ACL narrowing still takes the interactive fast path); a bulk change stays bulk."""
    cfg = ConnectorSettings(max_document_bytes=10_000, heavy_bytes=100)
    stage = ConnectorStage(Settings(), cfg, state=MemoryState())  # type: ignore[arg-type]
    await stage.start()
    [small] = await stage.handle(upsert(1, "x" * 100), CTX)
    assert small.event.priority == "interactive"
    indexed(stage, 1, "x" * 100)
    key = ("acme", "wiki:rb")
    stage.state.rows[key] = dataclasses.replace(  # type: ignore[attr-defined]
        stage.state.rows[key],  # type: ignore[attr-defined]
        acl_groups=("eng", "ops"),
    )
    narrower = META  # eng only: ops readers lose it
    outs = await stage.handle(upsert(2, "y" * 101, narrower), CTX)
    assert [(o.topic, o.event.priority) for o in outs] == [
        ("doc.control", "interactive"),
        ("doc.fetched", "bulk"),
    ]
    bulk = await stage.handle(upsert(3, "z" * 10).model_copy(update={"priority": "bulk"}), CTX)
    # the runtime keeps a bulk change's outputs bulk, but never a revocation
    assert [(o.topic, demote(o.event, "bulk", o.topic).priority) for o in bulk] == [
        ("doc.control", "interactive"),
        ("doc.fetched", "bulk"),
    ]


@pytest.mark.parametrize("last", [False, True])
async def test_a_fetch_that_keeps_failing_is_recorded_on_its_last_attempt(
    stage: ConnectorStage, monkeypatch: pytest.MonkeyPatch, last: bool
) -> None:
    """A version whose fetch fails transiently still makes older ones later in the batch
    stale; on its last attempt (the runtime dead-letters it and records it quarantined
    'dead_lettered') the connector records that with the batch already (lifetest F9)."""
    real = stage.fetcher.obtain

    async def flaky(ev: SourceUpsert) -> Any:
        if ev.source_seq == 9:
            raise TransientError("fetch timed out")
        return await real(ev)

    monkeypatch.setattr(stage.fetcher, "obtain", flaky)
    attempts = Settings().max_attempts
    ctx = StageContext(
        settings=Settings(), logger=logging.getLogger("test"), attempt=attempts if last else 1
    )
    nine, eight = await stage.handle_batch([upsert(9, "nine"), upsert(8, "eight")], ctx)
    assert isinstance(nine, TransientError)
    assert eight == []
    state = stage.state
    expect = [("wiki:rb", 9, "dead_lettered")] if last else []
    assert state.quarantined == expect  # type: ignore[attr-defined]
    assert state.accepted == []  # type: ignore[attr-defined]


async def test_an_unchanged_restatement_holds_its_seq(stage: ConnectorStage) -> None:
    """lifetest F13: the indexed bytes and metadata again at seq 9 change nothing, but
    an older upsert (seq 7) or delete (seq 8) after it is stale, in the batch and later."""
    indexed(stage, 5)
    same, seven, gone = await stage.handle_batch(
        [
            upsert(9),
            upsert(7, "seven"),
            SourceDelete(tenant_id="acme", document_id="wiki:rb", source_seq=8),
        ],
        CTX,
    )
    assert same == seven == gone == []
    assert stage.state.restated == {("acme", "wiki:rb"): 9}  # type: ignore[attr-defined]
    assert await stage.handle(upsert(8, "eight"), CTX) == []  # a later batch: still stale
    assert stage.state.accepted == []  # type: ignore[attr-defined]


async def test_unchanged_bytes_restate_an_acl_changed_since(stage: ConnectorStage) -> None:
    """lifetest F13: an ACL change (seq 7) narrowed the indexed seq 5 to ops; seq 9 states
    the same bytes and metadata, so its full ACL (eng) applies again: not unchanged."""
    indexed(stage, 5)
    row = stage.state.rows[("acme", "wiki:rb")]  # type: ignore[attr-defined]
    narrowed = dataclasses.replace(row, acl_seq=7, acl_groups=("ops",))
    stage.state.rows[("acme", "wiki:rb")] = narrowed  # type: ignore[attr-defined]
    *_, out = await stage.handle(upsert(9), CTX)  # (after the fast-path narrowing of ops)
    assert isinstance(out.event, DocFetched) and out.event.change == "metadata"
    assert await stage.handle(upsert(6), CTX) == []  # older than the ACL change: unchanged


async def test_every_accepted_change_carries_the_documents_reset_generation(
    stage: ConnectorStage,
) -> None:
    """lifetest F14: the connector stamps the document's seq_epoch (whatever the source
    sent) on what it passes on, so a pre-reset event replayed downstream is refused."""
    indexed(stage, 5)
    rows = stage.state.rows  # type: ignore[attr-defined]
    rows[("acme", "wiki:rb")] = dataclasses.replace(rows[("acme", "wiki:rb")], seq_epoch=3)
    lower = upsert(2, "the source restarted its counter").model_copy(update={"seq_epoch": 9})
    assert await stage.handle(lower, CTX) == []  # stale by seq: the reset did not lower it
    [out] = await stage.handle(upsert(6, "new bytes").model_copy(update={"seq_epoch": 9}), CTX)
    assert isinstance(out.event, DocFetched) and out.event.seq_epoch == 3
    [d] = await stage.handle(
        SourceDelete(tenant_id="acme", document_id="wiki:new", source_seq=1), CTX
    )
    assert d.event.seq_epoch == 0  # a document never seen (or never reset)
    assert '"seq_epoch"' not in d.event.model_dump_json()  # generation 0 is not written


def _acl(seq: int, groups: tuple[str, ...]) -> SourceAclChange:
    return SourceAclChange(
        tenant_id="acme", document_id="wiki:rb", source_seq=seq, acl_groups=groups
    )


@pytest.mark.parametrize("one_batch", [True, False])
async def test_an_upsert_restating_the_acl_before_an_accepted_acl_change_is_passed_on(
    stage: ConnectorStage, one_batch: bool
) -> None:
    """lifetest ACL-1: seq 5 indexed (eng); the ACL change at 6 grants ops and is on its
    way to the indexer; seq 7 states seq 5's bytes, metadata and ACL again (revoking
    ops). It was dropped as unchanged, and ops kept reading; now it is a metadata change
    (its full ACL applies over the change) and takes the fast path as a narrowing."""
    indexed(stage, 5)
    rows = stage.state.rows  # type: ignore[attr-defined]
    rows[("acme", "wiki:rb")] = dataclasses.replace(
        rows[("acme", "wiki:rb")], acl_groups=("eng",), classification="internal"
    )
    if one_batch:
        [grant], outs = await stage.handle_batch([_acl(6, ("eng", "ops")), upsert(7)], CTX)
    else:
        [grant] = await stage.handle(_acl(6, ("eng", "ops")), CTX)
        outs = await stage.handle(upsert(7), CTX)
    assert isinstance(grant.event, DocControl) and grant.event.acl is not None
    narrowing, fetched = outs
    assert isinstance(narrowing.event, DocControl) and narrowing.event.acl is not None
    assert narrowing.event.acl.narrowing and narrowing.event.acl.acl_groups == ("eng",)
    assert isinstance(fetched.event, DocFetched) and fetched.event.change == "metadata"
    assert stage.state.restated == {}  # type: ignore[attr-defined]


async def test_a_restatement_refused_by_the_write_is_decided_again(
    stage: ConnectorStage,
) -> None:
    """lifetest ACL-1 across lanes: the other lane's batch accepted an ACL change after
    this batch read the state; the status write refuses the restatement (nothing is
    written) and the upsert fails transiently: the runtime retries it with a new read."""
    indexed(stage, 5)
    stage.state.refuse_restated = True  # type: ignore[attr-defined]
    [out] = await stage.handle_batch([upsert(7)], CTX)
    assert isinstance(out, ChangedMeanwhile) and isinstance(out, TransientError)


async def test_an_acl_change_a_newer_statement_overtook_is_stale(stage: ConnectorStage) -> None:
    """lifetest ACL-1 across lanes: the restatement at seq 7 was recorded (by the other
    lane's batch) after this batch read the state: the ACL change at 6 is stale."""
    indexed(stage, 5)
    rows = stage.state.rows  # type: ignore[attr-defined]
    rows[("acme", "wiki:rb")] = rows[("acme", "wiki:rb")].with_statement(
        StatedAcl(7, 0, "whatever")
    )
    assert await stage.handle(_acl(6, ("eng", "ops")), CTX) == []


@pytest.mark.parametrize("newest", ["quarantined", "accepted"])
async def test_a_crashed_batch_redelivered_passes_its_older_changes_on_again(
    stage: ConnectorStage, newest: str
) -> None:
    """ADR 0008 amendment (3): the batch's status write holds its newest change of the
    document (seq 9); the batch crashes before its offset commit and is delivered again.
    Its older changes (a delete, an ACL change, a version narrowing the ACL) are stale
    against seq 9 the second time, but they are in the row's log of accepted changes:
    passed on again, unchanged, without a new status write. A change not in the log (a
    stale one, or one of another generation) is still dropped."""
    indexed(stage, 5)
    state: MemoryState = stage.state  # type: ignore[assignment]
    key = ("acme", "wiki:rb")
    state.rows[key] = dataclasses.replace(state.rows[key], acl_groups=("eng",))
    narrow = META.model_copy(update={"acl_groups": ("ops",)})
    nine = "x" * 10_001 if newest == "quarantined" else "nine"
    batch = [
        upsert(6, "six", narrow),
        SourceAclChange(tenant_id="acme", document_id="wiki:rb", source_seq=7, acl_groups=("a",)),
        SourceDelete(tenant_id="acme", document_id="wiki:rb", source_seq=8),
        upsert(9, nine),
    ]
    first = await stage.handle_batch(batch, CTX)
    assert [type(r).__name__ for r in first[:3]] == ["list"] * 3
    assert [(a.kind, a.seq) for a in state.logged[key]] == [
        ("acl", 7),
        ("content", 6),
        ("delete", 8),
    ] + ([("content", 9)] if newest == "accepted" else [])
    # what the write left: the batch's newest change, the log; the outputs were lost
    state.rows[key] = dataclasses.replace(
        state.rows[key],
        pending_seq=9,
        pending_status=newest,
        pending_hash=None if newest == "quarantined" else content_hash(b"nine"),
        stated_acl=StatedAcl(9, 0, "x"),
        accepted=tuple(state.logged[key]),
    )
    again = await stage.handle_batch(batch, CTX)
    for before, after in zip(first[:3], again[:3], strict=True):
        assert isinstance(before, list) and isinstance(after, list)
        assert [o.event.event_id for o in after] == [o.event.event_id for o in before]
    assert isinstance(again[0], list) and again[0][0].event.action == "acl"  # narrowing
    # another generation's log, or a change never accepted: dropped as before
    state.rows[key] = dataclasses.replace(state.rows[key], accepted=())
    assert (await stage.handle_batch(batch[:3], CTX)) == [[], [], []]
