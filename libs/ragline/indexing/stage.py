"""The indexer stage: Postgres first (one transaction per event), then one OpenSearch
projection per batch, then ``doc.indexed`` for every event whose stores are both written.

If OpenSearch cannot be reached or throttles after Postgres committed, the batch waits
for it, retrying the projection with exponential backoff for up to
``os_outage_wait_s`` (consumption pauses meanwhile: backpressure, nothing is dropped or
dead-lettered during a node restart). Past that, or on a permanent error, the affected
events fail with the translated error (TransientError is retried by the runtime, then
dead-lettered); Postgres keeps the truth, ``documents.os_revision`` stays behind
``revision``, and the next event of the document, the retry (a ledger hit) or
``ragline repair`` catches up.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

import psycopg
from opensearchpy import AsyncOpenSearch
from psycopg_pool import AsyncConnectionPool

from ragline.config import Settings
from ragline.errors import (
    ContractError,
    NotBuiltError,
    PermanentError,
    QuarantineError,
    RaglineError,
    TransientError,
)
from ragline.events import DocControl, DocEmbedded, DocIndexed, DocQuarantined, Topics
from ragline.indexing.metrics import OS_SYNC_FAILURES, OS_SYNC_SECONDS
from ragline.indexing.os_sync import OsSyncer, SyncResult
from ragline.indexing.outcome import Outcome, indexed_event
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.writer import IndexWriter
from ragline.runtime.publisher import SOURCE_AT_HEADER
from ragline.runtime.stage import BatchConfig, Output, Results, Stage, StageContext
from ragline.store.os_client import make_client
from ragline.store.pg_errors import pg_errors
from ragline.store.pool import open_pool

__all__ = ["IndexerStage"]

_log = logging.getLogger(__name__)

Indexable = DocEmbedded | DocControl | DocQuarantined


def _source_at(ctx: StageContext, event: Indexable) -> datetime:
    value = ctx.headers.get(SOURCE_AT_HEADER)
    if value:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    return event.occurred_at


def _terminal(event: Indexable, exc: Exception) -> Exception:
    """A version the stores refuse for good (its data: SQLSTATE class 22, or a contract
    mismatch) is quarantined, so its status ends as 'quarantined' with a reason instead of
    'accepted' forever (the runtime publishes doc.quarantined for a QuarantineError, which
    this stage then records). A schema error (class 42: a migration not applied) is the
    platform's fault, not the document's: retried (then dead-lettered, replayable)."""
    sqlstate = str(getattr(exc.__cause__, "sqlstate", "") or "")
    if isinstance(exc, PermanentError) and sqlstate.startswith("42"):
        return TransientError(f"schema not as expected (migrate?): {exc}")
    if (
        isinstance(event, DocEmbedded)
        and isinstance(exc, PermanentError)
        and not isinstance(exc, QuarantineError)
        and (
            isinstance(exc, ContractError)
            or isinstance(exc.__cause__, psycopg.DataError)
            or sqlstate.startswith("22")
        )
    ):
        kind = "contract" if isinstance(exc, ContractError) else "store"
        q = QuarantineError(
            "index_rejected", f"the indexer cannot store this version ({kind}: {exc})"[:1000]
        )
        q.__cause__ = exc
        return q
    return exc


class IndexerStage(Stage[Indexable, DocIndexed]):
    name: ClassVar[str] = "indexer"
    input_topics: ClassVar[tuple[str, ...]] = (
        Topics.DOC_EMBEDDED.value,
        Topics.DOC_CONTROL.value,
        Topics.DOC_QUARANTINED.value,
    )
    # one OpenSearch bulk + refresh per batch instead of per document. A batch waits up
    # to a refresh interval (1 s) for its wait_for, whatever its size: under a backlog
    # 128 documents a batch index 2.0x the chunks/s of 32 (bench/index_bench.py, session
    # 8); idle, a poll brings what is there (one document), so freshness is unchanged
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=128, linger_ms=20)

    def __init__(self, settings: Settings, config: IndexerSettings) -> None:
        super().__init__(settings)
        self.config = config
        self.writer = IndexWriter(consumer=self.config.consumer)
        self._pool: AsyncConnectionPool | None = None
        self._client: AsyncOpenSearch | None = None
        self._syncer: OsSyncer | None = None

    async def open(self) -> None:
        self._pool = await open_pool(
            self.settings.admin_dsn(),
            name="indexer",
            min_size=self.config.pool_min,
            max_size=self.config.pool_max,
        )
        self._client = make_client(self.settings, timeout_s=self.config.os_timeout_s)
        self._syncer = OsSyncer(
            self._client,
            index_prefix=self.settings.opensearch_index_prefix,
            refresh=self.config.os_refresh,
            bulk_size=self.config.os_bulk_size,
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @property
    def pool(self) -> AsyncConnectionPool:
        if self._pool is None:
            raise NotBuiltError("indexer stage used before start()")
        return self._pool

    @property
    def syncer(self) -> OsSyncer:
        if self._syncer is None:
            raise NotBuiltError("indexer stage used before start()")
        return self._syncer

    async def process_batch(
        self, events: Sequence[Indexable], ctx: StageContext
    ) -> Results[DocIndexed]:
        results: list[Sequence[Output[DocIndexed]] | BaseException] = [() for _ in events]
        outcomes: dict[int, Outcome] = {}
        try:
            with pg_errors():
                async with self.pool.connection() as conn:
                    for i, ev in enumerate(events):
                        try:
                            outcome = await self.writer.apply(conn, ev)
                        except Exception as exc:  # the runtime classifies it
                            results[i] = _terminal(ev, exc)
                            continue
                        if outcome is not None:
                            outcomes[i] = outcome
                    failed_tenants, rejected = await self._sync(conn, events, outcomes)
        except RaglineError as exc:  # no connection at all: every event failed alike
            return [exc for _ in events]
        for i, outcome in outcomes.items():
            ev = events[i]
            err = failed_tenants.get(ev.tenant_id)
            if err is not None and outcome.touched:
                results[i] = err
                continue
            why = rejected.get((ev.tenant_id, ev.document_id))
            if why is not None:  # OpenSearch refused a chunk: quarantined, neighbours go on
                results[i] = QuarantineError(
                    "opensearch_rejected", f"the lexical index rejected a chunk ({why})"[:1000]
                )
                continue
            out = indexed_event(ev, outcome, source_event_at=_source_at(ctx, ev))
            results[i] = [Output(topic=Topics.DOC_INDEXED.value, event=out)]
        return results

    async def _sync(
        self, conn: Any, events: Sequence[Indexable], outcomes: dict[int, Outcome]
    ) -> tuple[dict[str, RaglineError], dict[tuple[str, str], str]]:
        """Project every touched document to OpenSearch, one call per tenant. Returns the
        tenants whose projection failed, and the (tenant, document)s whose chunks
        OpenSearch rejected for good, with the reason."""
        by_tenant: dict[str, set[str]] = defaultdict(set)
        for i, outcome in outcomes.items():
            by_tenant[events[i].tenant_id].update(outcome.touched)
        failed: dict[str, RaglineError] = {}
        rejected: dict[tuple[str, str], str] = {}
        for tenant, docs in sorted(by_tenant.items()):
            t0 = time.perf_counter()
            try:
                result = await self._sync_waiting(conn, tenant, sorted(docs))
            except RaglineError as exc:
                OS_SYNC_FAILURES.labels(type(exc).__name__).inc()
                failed[tenant] = exc
            else:
                rejected.update({(tenant, d): why for d, why in result.rejected.items()})
            finally:
                OS_SYNC_SECONDS.observe(time.perf_counter() - t0)
        return failed, rejected

    async def _sync_waiting(self, conn: Any, tenant: str, docs: list[str]) -> SyncResult:
        """``sync``, retried with exponential backoff while OpenSearch is unreachable or
        throttling (TransientError), for up to ``os_outage_wait_s``."""
        deadline = time.monotonic() + self.config.os_outage_wait_s
        wait = self.config.os_retry_backoff_s
        while True:
            try:
                return await self.syncer.sync(conn, tenant, docs)
            except TransientError as exc:
                if time.monotonic() + wait > deadline:
                    raise
                OS_SYNC_FAILURES.labels(type(exc).__name__).inc()
                _log.warning(
                    "opensearch unavailable, waiting",
                    extra={"fields": {"error": type(exc).__name__, "wait_s": wait}},
                )
                await asyncio.sleep(wait)
                wait = min(wait * 2.0, self.config.os_retry_backoff_max_s)
