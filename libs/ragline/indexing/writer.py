"""Apply one event to Postgres in one transaction: the seq guards, the generation swap,
tombstones, ACL re-stamps, supersession and the ledger entry, all or nothing.

Order rules (docs/indexing.md): content and deletes share ``source_seq``; ACL changes
have ``acl_seq``. An upsert with seq s applies iff s > source_seq; a delete likewise (its
seq becomes the tombstone's source_seq); an ACL change with seq a applies iff a > acl_seq,
and an upsert never overwrites an ACL stamped by a newer acl_seq.

``document_status`` carries the newest ACL known too (0007): the indexed ACL on an
upsert, the event's meta ACL (or a newer stored one) on a quarantine, every applied or
parked ACL change; a delete keeps the last known. The query role reads the status of a
never-indexed (e.g. quarantined) document through it.
"""

from __future__ import annotations

import time
from dataclasses import replace

from psycopg import AsyncConnection

from ragline.errors import PermanentError
from ragline.events import DocControl, DocEmbedded, DocQuarantined, IndexAction
from ragline.indexing.metrics import CHUNKS_WRITTEN, DOCUMENTS_APPLIED, PG_WRITE_SECONDS
from ragline.indexing.outcome import Outcome
from ragline.indexing.projection import DocumentFields, chunk_rows, document_values
from ragline.runtime.claimcheck import purge_document_bodies
from ragline.store import chunks as chunk_store
from ragline.store import documents as doc_store
from ragline.store.ledger import record_outcome, recorded_outcome
from ragline.store.pending_acl import (
    PendingAcl,
    delete_pending_acl,
    get_pending_acl,
    put_pending_acl,
)
from ragline.store.status import newest_acl, reassert_status, set_status_acl, write_status
from ragline.store.supersession import mark_superseded, release_superseded, superseding_document

__all__ = ["IndexWriter"]


class IndexWriter:
    """The Postgres half of the indexer. Each ``apply_*`` is one transaction."""

    def __init__(self, *, consumer: str = "indexer") -> None:
        self.consumer = consumer

    async def apply(
        self, conn: AsyncConnection, event: DocEmbedded | DocControl | DocQuarantined
    ) -> Outcome | None:
        t0 = time.perf_counter()
        try:
            if isinstance(event, DocEmbedded):
                return await self._ledgered(conn, event)
            if isinstance(event, DocControl):
                return await self._ledgered(conn, event)
            await self.apply_quarantine(conn, event)
            return None
        finally:
            PG_WRITE_SECONDS.observe(time.perf_counter() - t0)

    async def _ledgered(self, conn: AsyncConnection, event: DocEmbedded | DocControl) -> Outcome:
        t, d = event.tenant_id, event.document_id
        async with conn.transaction():
            await doc_store.lock_document(conn, t, d)
            prior = await recorded_outcome(conn, self.consumer, event.event_id)
            if prior is not None:
                outcome = Outcome.model_validate(prior)
                DOCUMENTS_APPLIED.labels(outcome.action.value, "replayed").inc()
                return outcome
            if isinstance(event, DocEmbedded):
                outcome = await self._upsert(conn, event)
            elif event.action == "delete":
                outcome = await self._delete(conn, event)
            else:
                outcome = await self._acl(conn, event)
            await record_outcome(
                conn,
                self.consumer,
                event.event_id,
                tenant_id=t,
                document_id=d,
                source_seq=event.source_seq,
                outcome=outcome.to_json(),
            )
        result = "skipped" if outcome.skipped else "applied"
        DOCUMENTS_APPLIED.labels(outcome.action.value, result).inc()
        return outcome

    # ------------------------------------------------------------------ content
    async def _upsert(self, conn: AsyncConnection, ev: DocEmbedded) -> Outcome:
        t, d, meta = ev.tenant_id, ev.document_id, ev.meta
        if ev.embedding_dim != chunk_store.EMBEDDING_DIM:
            raise PermanentError(
                f"embedding_dim {ev.embedding_dim} != chunks.embedding dimension "
                f"{chunk_store.EMBEDDING_DIM} (a new model needs a migration)"
            )
        state = await doc_store.get_state(conn, t, d)
        if state is not None and ev.source_seq <= state.source_seq:
            await self._reassert_status(conn, ev.source_seq, state)
            return Outcome(
                action=IndexAction.UPSERT,
                generation=state.generation,
                chunk_count=state.chunk_count,
                acl_groups_before=state.acl_groups,
                acl_groups_after=state.acl_groups,
                skipped=True,
                touched=(d,),
            )
        # the newest ACL known so far: the row's, or one parked before the row existed
        # (a tombstone created by a later delete does not carry it)
        pending = await get_pending_acl(conn, t, d)
        kept: doc_store.DocumentState | PendingAcl | None = state
        if pending is not None and (state is None or pending.acl_seq > state.acl_seq):
            kept = pending
        acl: tuple[str, ...] = meta.acl_groups
        classification: str = meta.classification.value
        acl_seq = ev.source_seq
        if kept is not None and kept.acl_seq > ev.source_seq:  # a newer ACL change won
            acl_seq = kept.acl_seq
            acl = tuple(kept.acl_groups)
            classification = kept.classification or classification
        fields = DocumentFields(
            acl_groups=acl,
            classification=classification,
            acl_seq=acl_seq,
            generation=(state.generation if state else 0) + 1,
            revision=(state.revision if state else 0) + 1,
            superseded=False,
            superseded_by=None,
        )
        by = await superseding_document(conn, t, d)
        if by is not None:
            fields = replace(fields, superseded=True, superseded_by=by)
        rows = chunk_rows(ev, fields)
        await doc_store.upsert_document(conn, t, d, document_values(ev, fields))
        await chunk_store.write_chunks(conn, rows)
        await chunk_store.delete_other_generations(conn, t, d, fields.generation)
        CHUNKS_WRITTEN.inc(len(rows))
        if pending is not None:
            await delete_pending_acl(conn, t, d)
        touched = {d}
        touched.update(await mark_superseded(conn, t, meta.supersedes, d))
        if state is not None and state.status == "indexed":
            touched.update(await release_superseded(conn, t, d))
        await write_status(
            conn,
            t,
            d,
            source_seq=ev.source_seq,
            status="indexed",
            stage="indexer",
            content_hash=ev.content_hash,
            findings=ev.findings.model_dump(mode="json"),
            acl=(acl, acl_seq),
        )
        live_before = state is not None and state.status == "indexed"
        return Outcome(
            action=IndexAction.UPSERT,
            generation=fields.generation,
            chunk_count=len(rows),
            acl_groups_before=state.acl_groups if (state and live_before) else (),
            acl_groups_after=acl,
            touched=tuple(sorted(touched)),
        )

    async def _reassert_status(
        self, conn: AsyncConnection, seq: int, state: doc_store.DocumentState
    ) -> None:
        """A replay of the current version: put the status back if intake overwrote it."""
        if seq == state.source_seq:
            await reassert_status(
                conn,
                state.tenant_id,
                state.document_id,
                source_seq=seq,
                status="indexed" if state.status == "indexed" else "deleted",
                stage="indexer",
            )

    # ------------------------------------------------------------------ control
    async def _delete(self, conn: AsyncConnection, ev: DocControl) -> Outcome:
        t, d = ev.tenant_id, ev.document_id
        state = await doc_store.get_state(conn, t, d)
        if state is not None and ev.source_seq <= state.source_seq:
            await self._reassert_status(conn, ev.source_seq, state)
            return Outcome(
                action=IndexAction.DELETE,
                generation=state.generation,
                chunk_count=state.chunk_count,
                skipped=True,
                touched=(d,),
            )
        generation = (state.generation if state else 0) + 1
        await chunk_store.delete_document_chunks(conn, t, d)
        # raw (pre-scanner) bodies of the document go with it (docs/scanning.md)
        await purge_document_bodies(conn, t, d, stored_before=ev.occurred_at)
        await doc_store.tombstone(
            conn,
            t,
            d,
            source_seq=ev.source_seq,
            generation=generation,
            revision=(state.revision if state else 0) + 1,
        )
        touched = {d}
        touched.update(await release_superseded(conn, t, d))
        await write_status(conn, t, d, source_seq=ev.source_seq, status="deleted", stage="indexer")
        live_before = state is not None and state.status == "indexed"
        return Outcome(
            action=IndexAction.DELETE,
            generation=generation,
            chunk_count=0,
            acl_groups_before=state.acl_groups if (state and live_before) else (),
            touched=tuple(sorted(touched)),
        )

    async def _acl(self, conn: AsyncConnection, ev: DocControl) -> Outcome:
        assert ev.acl is not None
        t, d = ev.tenant_id, ev.document_id
        groups = tuple(sorted(set(ev.acl.acl_groups)))
        cls = ev.acl.classification.value if ev.acl.classification is not None else None
        state = await doc_store.get_state(conn, t, d)
        # the status row (say, of a document quarantined before it was ever indexed) is
        # read through its own ACL: it follows every change, guarded by its own acl_seq
        await set_status_acl(conn, t, d, acl_seq=ev.source_seq, acl_groups=groups)
        if state is None:  # overtook the first upsert: keep it for that upsert
            await put_pending_acl(
                conn, t, d, acl_seq=ev.source_seq, acl_groups=groups, classification=cls
            )
            return Outcome(
                action=IndexAction.ACL,
                generation=0,
                chunk_count=0,
                acl_groups_after=groups,
                skipped=True,
            )
        if ev.source_seq <= state.acl_seq:
            return Outcome(
                action=IndexAction.ACL,
                generation=state.generation,
                chunk_count=state.chunk_count,
                acl_groups_before=state.acl_groups,
                acl_groups_after=state.acl_groups,
                skipped=True,
                touched=(d,),
            )
        live = state.status == "indexed"
        await doc_store.set_acl(
            conn,
            t,
            d,
            acl_seq=ev.source_seq,
            acl_groups=groups,
            classification=cls,
            revision=state.revision + (1 if live else 0),
        )
        if live:
            await chunk_store.restamp_acl(conn, t, d, acl_groups=groups, classification=cls)
        return Outcome(
            action=IndexAction.ACL,
            generation=state.generation,
            chunk_count=state.chunk_count,
            acl_groups_before=state.acl_groups,
            acl_groups_after=groups,
            skipped=not live,
            touched=(d,),
        )

    # ------------------------------------------------------------------ quarantine
    async def apply_quarantine(self, conn: AsyncConnection, ev: DocQuarantined) -> None:
        """Record why the document was stopped (guarded by seq; idempotent by nature)."""
        t, d = ev.tenant_id, ev.document_id
        async with conn.transaction():
            await doc_store.lock_document(conn, t, d)
            # the ACL the status is read through: the event's, unless an ACL change
            # already applied to the document row (or parked) is newer
            state = await doc_store.get_state(conn, t, d)
            pending = await get_pending_acl(conn, t, d)
            acl = newest_acl(
                (ev.meta.acl_groups, ev.source_seq) if ev.meta is not None else None,
                (state.acl_groups, state.acl_seq) if state is not None else None,
                (pending.acl_groups, pending.acl_seq) if pending is not None else None,
            )
            await write_status(
                conn,
                t,
                d,
                source_seq=ev.source_seq,
                status="quarantined",
                stage=ev.stage,
                content_hash=ev.content_hash,
                reason_code=ev.reason_code,
                reason=ev.reason,
                findings=ev.findings.model_dump(mode="json") if ev.findings else None,
                acl=acl,
            )
        DOCUMENTS_APPLIED.labels("quarantine", "applied").inc()
