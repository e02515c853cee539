"""Runs ``parse_document`` off the event loop: in a thread, or in worker processes with
a per-document timeout and a memory cap (a runaway PDF cannot stall the consumer).
"""

from __future__ import annotations

import asyncio
import time
from multiprocessing.pool import Pool
from typing import Any

from ragline.errors import QuarantineError, TransientError
from ragline.events import DocumentMeta, ParsedDocument
from ragline.runtime.oneshot import WorkLimit, run_once, shutdown, spawn_pool, submit

from .detect import Format, detect_format
from .dispatcher import parse_document
from .metrics import (
    HEAVY_DOCUMENTS,
    PARSE_BYTES,
    PARSE_DOCUMENTS,
    PARSE_QUARANTINED,
    PARSE_SECONDS,
    PARSE_WORKER_RESTARTS,
)
from .settings import ParserSettings

__all__ = ["ParseExecutor"]

# what a worker sends back: exceptions with custom __init__ (QuarantineError) do not
# survive pickling, so outcomes travel as plain tuples
_Outcome = tuple[str, Any, Any]
_OVER_MEMORY: _Outcome = (
    "quarantine",
    "resource_limit",
    "parsing exceeded the worker memory limit",
)


def _job(data: bytes, meta: DocumentMeta, settings: ParserSettings) -> _Outcome:
    try:
        return ("ok", parse_document(data, meta, settings), None)
    except QuarantineError as exc:
        return ("quarantine", exc.reason_code, exc.reason)
    except MemoryError:
        return _OVER_MEMORY


def _plain_and_small(data: bytes, meta: DocumentMeta, settings: ParserSettings) -> bool:
    """Plain text up to ``inline_text_bytes``: parsed in a thread, not in a worker.

    The hop to a worker (the bytes, the meta and the settings pickled there, the parsed
    document pickled back, four thread handoffs in this process) cost ~1.3 ms of CPU per
    SciFact abstract, several times its parse (issue 35). Splitting plain text into
    paragraphs is linear in its bytes, so at this size a timeout has nothing to catch;
    every other format (markdown, HTML, PDF, ...) still goes to the workers. Detection is
    repeated by the parse itself, which raises what it raises (a quarantine)."""
    if len(data) > settings.inline_text_bytes:
        return False
    try:
        return detect_format(data, meta.mime_type, meta.uri).format is Format.TEXT
    except QuarantineError:
        return False  # the worker quarantines it, as before


class ParseExecutor:
    """``await parse(data, meta)``: quarantines and metrics included.

    ``workers == 0`` parses in a thread (no timeout: a thread cannot be killed);
    ``workers >= 1`` uses a spawn-context process pool whose workers are replaced
    every ``worker_max_tasks`` documents (a respawn costs about a second of imports),
    and which is killed and rebuilt when a document exceeds
    ``timeout_s`` (the documents in flight with it are failed as transient, so the
    runtime retries them). A document over ``heavy_bytes`` gets a process of its own
    that exits afterwards (``_in_own_process``): it never occupies the pool's workers,
    so documents behind it (an interactive edit beside a bulk backfill) are not held up,
    and the memory it took returns to the system. Plain text up to
    ``inline_text_bytes`` is parsed in a thread even with workers (``_plain_and_small``).
    """

    def __init__(self, settings: ParserSettings) -> None:
        self.settings = settings
        self._pool: Pool | None = None
        self._pending: set[asyncio.Future[_Outcome]] = set()

    async def start(self) -> None:
        if self.settings.workers > 0 and self._pool is None:
            self._pool = await asyncio.to_thread(self._new_pool)

    async def stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            self._fail_pending()
            await asyncio.to_thread(shutdown, pool)

    def _new_pool(self) -> Pool:
        return spawn_pool(
            self.settings.workers,
            memory_mb=self.settings.worker_memory_mb,
            max_tasks=self.settings.worker_max_tasks,
        )

    def _fail_pending(self) -> None:
        for fut in self._pending:
            if not fut.done():
                fut.set_exception(TransientError("parser worker pool restarted"))
        self._pending.clear()

    async def _in_pool(self, pool: Pool, data: bytes, meta: DocumentMeta) -> _Outcome:
        fut = submit(pool, _job, (data, meta, self.settings))
        self._pending.add(fut)
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.settings.timeout_s)
        except TimeoutError:
            PARSE_WORKER_RESTARTS.inc()
            self._pending.discard(fut)
            self._fail_pending()
            if self._pool is pool:
                self._pool = await asyncio.to_thread(self._new_pool)
            await asyncio.to_thread(shutdown, pool)
            raise self._timed_out() from None
        finally:
            self._pending.discard(fut)

    def _timed_out(self) -> QuarantineError:
        PARSE_QUARANTINED.labels(reason_code="parse_timeout").inc()
        return QuarantineError(
            "parse_timeout", f"parsing took longer than {self.settings.timeout_s:g}s"
        )

    async def _in_own_process(self, data: bytes, meta: DocumentMeta) -> _Outcome:
        """A heavy document in a process of its own, ended afterwards
        (``runtime.oneshot.run_once``): the pool's workers stay free for the documents
        behind it, and the memory it took is given back."""
        HEAVY_DOCUMENTS.inc()
        try:
            return await run_once(
                _job,
                data,
                meta,
                self.settings,
                timeout_s=self.settings.timeout_s,
                memory_mb=self.settings.worker_memory_mb,
            )
        except WorkLimit as exc:
            if exc.limit == "memory":
                return _OVER_MEMORY
            PARSE_WORKER_RESTARTS.inc()
            raise self._timed_out() from None

    async def parse(self, data: bytes, meta: DocumentMeta) -> ParsedDocument:
        started = time.perf_counter()
        if self._pool is not None and 0 < self.settings.heavy_bytes < len(data):
            outcome = await self._in_own_process(data, meta)
        elif self._pool is not None and not _plain_and_small(data, meta, self.settings):
            outcome = await self._in_pool(self._pool, data, meta)
        else:
            outcome = await asyncio.to_thread(_job, data, meta, self.settings)
        kind, first, second = outcome
        if kind == "quarantine":
            PARSE_QUARANTINED.labels(reason_code=first).inc()
            raise QuarantineError(first, second)
        doc: ParsedDocument = first
        PARSE_DOCUMENTS.labels(format=doc.format).inc()
        PARSE_BYTES.labels(format=doc.format).inc(len(data))
        PARSE_SECONDS.labels(format=doc.format).observe(time.perf_counter() - started)
        return doc
