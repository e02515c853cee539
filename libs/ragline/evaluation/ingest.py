"""Ingest a dataset through the real pipeline: publish ``SourceUpsert`` events to
``source.changes`` and wait until Postgres shows every document indexed with the expected
content hash and ACL; then apply the post-ingest changes (deletes, ACL revocations) and
wait for those too. No side door: what the harness measures is what the pipeline built.

Each run uses a fresh ``source_seq`` base (milliseconds since the epoch), so re-running
against a stack that already holds the dataset is cheap (the connector drops unchanged
content) and a document deleted by the previous run is restored before it is deleted
again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
from tqdm.auto import tqdm

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.evaluation.datasets import AfterIngest, EvalDataset, SourceDocument
from ragline.events import EventBase, SourceAclChange, SourceDelete, SourceUpsert, Topics
from ragline.runtime.lag import wait_drained
from ragline.store.pg_errors import pg_errors

__all__ = ["IngestResult", "IngestTimeout", "Publisher", "ingest_dataset"]

Key = tuple[str, str]  # (tenant_id, document_id)
Publisher = Callable[[Settings], Any]  # -> an async context manager with .publish(topic, ev)

_DOCS = (
    "SELECT d.tenant_id, d.document_id, d.status, d.content_hash, d.acl_groups,"
    " d.source_seq, d.acl_seq"
    " FROM documents d"
    " JOIN unnest(%s::text[], %s::text[]) AS k(tenant_id, document_id)"
    " USING (tenant_id, document_id)"
)
_STATUS = (
    "SELECT s.tenant_id, s.document_id, s.status, s.content_hash, s.source_seq, s.reason_code"
    " FROM document_status s"
    " JOIN unnest(%s::text[], %s::text[]) AS k(tenant_id, document_id)"
    " USING (tenant_id, document_id)"
    " WHERE s.status IN ('quarantined', 'failed')"
)


class IngestTimeout(RaglineError):
    """The pipeline did not finish the dataset in time (names a few missing documents)."""


@dataclass(kw_only=True)
class IngestResult:
    documents: int
    indexed: int = 0
    quarantined: dict[str, str] = field(default_factory=dict)  # document id -> reason code
    unexpected: list[str] = field(default_factory=list)  # outcome differs from `expect`
    publish_s: float = 0.0
    indexed_s: float = 0.0  # first publish -> last document indexed
    after_ingest_s: float = 0.0

    @property
    def docs_per_s(self) -> float | None:
        return self.documents / self.indexed_s if self.indexed_s > 0 else None

    def as_dict(self) -> dict[str, float | int | str | None]:
        return {
            "documents": self.documents,
            "indexed": self.indexed,
            "quarantined": len(self.quarantined),
            "unexpected": len(self.unexpected),
            "publish_s": round(self.publish_s, 2),
            "indexed_s": round(self.indexed_s, 2),
            "after_ingest_s": round(self.after_ingest_s, 2),
            "docs_per_s": round(self.docs_per_s, 2) if self.docs_per_s else None,
        }


@dataclass(frozen=True, kw_only=True)
class _Expect:
    kind: Literal["upsert", "delete", "acl"]
    seq: int
    content_hash: str | None = None
    acl_groups: tuple[str, ...] = ()


def _default_publisher(settings: Settings) -> Any:
    from ragline.runtime.publisher import EventPublisher

    return EventPublisher(settings, service="eval")


def _done(exp: _Expect, doc: tuple[Any, ...] | None) -> bool:
    if exp.kind == "delete":
        return doc is None or (doc[2] == "deleted" and doc[5] >= exp.seq)
    if doc is None:
        return False
    _, _, status, chash, acl, _seq, acl_seq = doc
    if exp.kind == "acl":
        return sorted(acl or ()) == sorted(exp.acl_groups) and acl_seq >= exp.seq
    return (
        status == "indexed"
        and chash == exp.content_hash
        and sorted(acl or ()) == sorted(exp.acl_groups)
    )


class _Waiter:
    """Polls Postgres until every expected state is reached or the deadline passes."""

    def __init__(self, settings: Settings, interval_s: float, timeout_s: float) -> None:
        self.dsn = settings.admin_dsn()
        self.interval_s = interval_s
        self.timeout_s = timeout_s

    async def wait(
        self, expected: dict[Key, _Expect], result: IngestResult, *, desc: str, progress: bool
    ) -> None:
        pending = dict(expected)
        deadline = time.monotonic() + self.timeout_s
        bar = tqdm(total=len(expected), desc=desc, unit="doc", disable=not progress)
        try:
            with pg_errors():
                async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
                    while pending:
                        finished = await self._poll(conn, pending, result)
                        for key in finished:
                            del pending[key]
                        bar.update(len(finished))
                        if not pending:
                            break
                        if time.monotonic() > deadline:
                            sample = ", ".join(f"{t}/{d}" for t, d in list(pending)[:10])
                            raise IngestTimeout(
                                f"{desc}: {len(pending)} of {len(expected)} documents not "
                                f"done after {self.timeout_s:.0f}s (e.g. {sample}); check the "
                                "services and the DLQ topics"
                            )
                        await asyncio.sleep(self.interval_s)
        finally:
            bar.close()

    async def _poll(
        self, conn: psycopg.AsyncConnection[Any], pending: dict[Key, _Expect], result: IngestResult
    ) -> list[Key]:
        tenants = [k[0] for k in pending]
        ids = [k[1] for k in pending]
        docs = {
            (r[0], r[1]): r for r in await (await conn.execute(_DOCS, (tenants, ids))).fetchall()
        }
        bad = {
            (r[0], r[1]): r for r in await (await conn.execute(_STATUS, (tenants, ids))).fetchall()
        }
        finished: list[Key] = []
        for key, exp in pending.items():
            if _done(exp, docs.get(key)):
                finished.append(key)
                result.indexed += exp.kind == "upsert"
                continue
            st = bad.get(key)
            if (
                exp.kind == "upsert"
                and st is not None
                and (st[3] == exp.content_hash or st[4] >= exp.seq)
            ):
                result.quarantined[key[1]] = str(st[5] or st[2])
                finished.append(key)
        return finished


def _upsert(doc: SourceDocument, seq: int) -> SourceUpsert:
    return SourceUpsert(
        tenant_id=doc.tenant,
        document_id=doc.document_id,
        content_hash=doc.content_hash,
        source_seq=seq,
        meta=doc.meta,
        content_text=doc.content_text,
    )


def _follow_up(a: AfterIngest, seq: int) -> EventBase:
    if a.action == "delete":
        return SourceDelete(tenant_id=a.tenant, document_id=a.document_id, source_seq=seq)
    return SourceAclChange(
        tenant_id=a.tenant,
        document_id=a.document_id,
        source_seq=seq,
        acl_groups=a.acl_groups,
        classification=a.classification,
    )


async def _publish(
    settings: Settings,
    publisher: Publisher,
    events: Sequence[EventBase],
    desc: str,
    progress: bool,
    *,
    in_flight: int = 1,
) -> None:
    """Publish with up to ``in_flight`` unacknowledged sends. Only events of distinct
    documents may be in flight together (per-key order is the broker's promise)."""
    sem = asyncio.Semaphore(in_flight)
    bar = tqdm(total=len(events), desc=desc, unit="event", disable=not progress)

    async def one(pub: Any, ev: EventBase) -> None:
        async with sem:
            await pub.publish(Topics.SOURCE_CHANGES, ev)
        bar.update(1)

    try:
        async with publisher(settings) as pub:
            await asyncio.gather(*(one(pub, ev) for ev in events))
    finally:
        bar.close()


async def ingest_dataset(
    dataset: EvalDataset,
    settings: Settings,
    *,
    timeout_s: float = 900.0,
    poll_interval_s: float = 0.5,
    progress: bool = True,
    publisher: Publisher = _default_publisher,
    drain: tuple[str, ...] = (),
    drain_timeout_s: float = 60.0,
) -> IngestResult:
    """Publish the dataset, wait for the pipeline, apply and wait for the follow-ups.

    A document row says ``indexed`` once Postgres has it; OpenSearch is written right
    after, in the same batch. ``drain`` names stages (e.g. ``("indexer",)``) whose backlog
    must reach 0 before returning, so lexical search sees every document too (a stage
    commits only after its writes): bounded by ``drain_timeout_s``, then it goes on."""
    base = time.time_ns() // 1_000_000
    result = IngestResult(documents=len(dataset.documents))
    waiter = _Waiter(settings, poll_interval_s, timeout_s)
    started = time.perf_counter()
    upserts = [_upsert(d, base) for d in dataset.documents]  # one per document
    await _publish(settings, publisher, upserts, "publish", progress, in_flight=32)
    result.publish_s = time.perf_counter() - started
    expected = {
        (d.tenant, d.document_id): _Expect(
            kind="upsert", seq=base, content_hash=d.content_hash, acl_groups=d.meta.acl_groups
        )
        for d in dataset.documents
    }
    await waiter.wait(expected, result, desc="indexed", progress=progress)
    result.indexed_s = time.perf_counter() - started
    for d in dataset.documents:
        got_quarantined = d.document_id in result.quarantined
        if got_quarantined != (d.expect == "quarantined"):
            result.unexpected.append(d.document_id)
    if dataset.after_ingest:
        t0 = time.perf_counter()
        seq = base + 1
        await _publish(
            settings,
            publisher,
            [_follow_up(a, seq) for a in dataset.after_ingest],
            "post-ingest changes",
            progress,
        )
        follow = {
            (a.tenant, a.document_id): _Expect(kind=a.action, seq=seq, acl_groups=a.acl_groups)
            for a in dataset.after_ingest
        }
        await waiter.wait(follow, IngestResult(documents=0), desc="applied", progress=progress)
        result.after_ingest_s = time.perf_counter() - t0
    if drain:
        await _drain(settings, drain, drain_timeout_s)
    return result


async def _drain(settings: Settings, stages: tuple[str, ...], timeout_s: float) -> bool:
    """True once every named stage has no backlog; False after ``timeout_s`` (a busy
    shared platform may never be idle: the caller goes on)."""
    try:
        lags = await wait_drained(settings, stages, timeout_s=timeout_s, poll_s=0.2)
    except RaglineError:
        return False  # lag is best effort: the documents are in Postgres already
    return sum(x.total for x in lags) == 0
