"""Apply one event to Postgres in one transaction: the order guards, the generation swap,
tombstones, ACL re-stamps, supersession and the ledger entry, all or nothing.

Order rules: ``ragline.order`` (one rule, used by the connector too; docs/indexing.md).
Content and deletes are ordered by the content key (source_seq, delete over upsert,
content hash); ACL statements by the ACL key (acl_seq, change over upsert). The ledger
is keyed by the platform's identity of the change (``ledger_identity``), never by the
caller's event id, and only ever matches an entry of the same tenant and document.

``document_status`` carries the newest ACL known too (0007): the indexed ACL on an
upsert, the event's meta ACL (or a newer stored one) on a quarantine, every applied or
parked ACL change; a delete keeps the last known. The query role reads the status of a
never-indexed (e.g. quarantined) document through it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from psycopg import AsyncConnection

from ragline.errors import PermanentError
from ragline.events import (
    Classification,
    DocControl,
    DocEmbedded,
    DocQuarantined,
    IndexAction,
    acl_digest,
    change_identity,
)
from ragline.hashing import meta_hash
from ragline.indexing.metrics import CHUNKS_WRITTEN, DOCUMENTS_APPLIED, PG_WRITE_SECONDS
from ragline.indexing.outcome import Outcome
from ragline.indexing.projection import DocumentFields, chunk_rows, document_values
from ragline.order import (
    ACL_FROM_CHANGE,
    ACL_FROM_UPSERT,
    AclKey,
    ContentKey,
    acl_applies,
    content_key,
    epoch_stale,
)
from ragline.store import chunks as chunk_store
from ragline.store import documents as doc_store
from ragline.store.claimcheck import purge_document_bodies
from ragline.store.ledger import record_outcome, recorded_outcome
from ragline.store.pending_acl import delete_pending_acl, get_pending_acl, put_pending_acl
from ragline.store.quarantine_acls import (
    QuarantineAcl,
    add_quarantine_acl,
    prune_quarantine_acls,
    quarantine_acls_above,
)
from ragline.store.seq_epoch import current_epoch
from ragline.store.spaces import write_space_vectors
from ragline.store.status import (
    StatusRow,
    mark_awaiting_content,
    newest_acl,
    read_status,
    reassert_status,
    set_status_acl,
    write_status,
)
from ragline.store.supersession import refresh_supersession

__all__ = ["IndexWriter", "ledger_identity", "stricter_classification"]

_log = logging.getLogger(__name__)

_CLASS_ORDER = [c.value for c in Classification]  # public < internal < ... < restricted


def stricter_classification(a: str | None, b: str | None) -> str | None:
    """The more restrictive of two classifications (None when both are unknown)."""
    known = [c for c in (a, b) if c in _CLASS_ORDER]
    return max(known, key=_CLASS_ORDER.index) if known else (a or b)


def ledger_identity(event: DocEmbedded | DocControl) -> str:
    """What the change *is*, for the ledger: tenant, document, kind, seq and content or
    ACL digest (events.change_identity). A caller's event id plays no part."""
    t, d, seq = event.tenant_id, event.document_id, event.source_seq
    if isinstance(event, DocEmbedded):
        digest = ":".join(
            (
                event.content_hash,
                meta_hash(event.meta),
                event.embedding_model,
                event.embedding_revision,
            )
        )
        return change_identity(t, d, "doc.embedded", seq, digest)
    if event.action == "delete" or event.acl is None:
        return change_identity(t, d, "delete", seq)
    acl = event.acl
    cls = acl.classification.value if acl.classification is not None else None
    kind = "acl.narrowing" if acl.narrowing else "acl"
    return change_identity(t, d, kind, seq, acl_digest(acl.acl_groups, cls))


def _stored_key(state: doc_store.DocumentState) -> ContentKey:
    return content_key(
        state.source_seq, deleted=state.status == "deleted", content_hash=state.content_hash
    )


def _unchanged(state: doc_store.DocumentState, action: IndexAction) -> Outcome:
    """The outcome of a change that leaves the document as it is (stale, or the same)."""
    return Outcome(
        action=action,
        generation=state.generation,
        chunk_count=state.chunk_count,
        acl_groups_before=state.acl_groups,
        acl_groups_after=state.acl_groups,
        skipped=True,
        touched=(state.document_id,),
    )


def _provisional(state: doc_store.DocumentState) -> bool:
    """Is the row's ACL a narrowing (ADR 0007: a fast-path narrowing or a quarantine of a
    newer version), not a full statement (the indexed version's own ACL, an ACL change)?
    Narrowings are intersections: they commute, whatever order they arrive in."""
    return state.acl_rank == ACL_FROM_UPSERT and state.acl_seq > state.source_seq


def _newer_statement(
    status: StatusRow | None, key: ContentKey, base: AclKey
) -> tuple[str, ...] | None:
    """The ACL a newer version states (in flight or quarantined, recorded with its status)
    when it is newer than ``base``: an older version indexed now is readable only by the
    groups both grant (ADR 0007, lifetest F11: the newer one may have been quarantined
    before the older one reached the indexer)."""
    if status is None or status.acl is None or status.key <= key:
        return None
    groups, seq, rank = status.acl
    if rank != ACL_FROM_UPSERT or AclKey(seq, rank) <= base:
        return None
    return groups


def _log_stale_generation(
    event: DocEmbedded | DocControl | DocQuarantined, current: int, reason: str
) -> None:
    _log.info(
        "stale generation",
        extra={
            "fields": {
                "tenant_id": event.tenant_id,
                "document_id": event.document_id,
                "event_type": event.event_type,
                "source_seq": event.source_seq,
                "seq_epoch": event.seq_epoch,
                "current_seq_epoch": current,
                "reason": reason,
            }
        },
    )


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
            return await self.apply_quarantine(conn, event)
        finally:
            PG_WRITE_SECONDS.observe(time.perf_counter() - t0)

    async def _ledgered(self, conn: AsyncConnection, event: DocEmbedded | DocControl) -> Outcome:
        t, d = event.tenant_id, event.document_id
        identity = ledger_identity(event)
        async with conn.transaction():
            await doc_store.lock_document(conn, t, d)
            stale = await self._older_generation(conn, event)
            if stale is not None:  # not ledgered: the change may come again, re-accepted
                DOCUMENTS_APPLIED.labels(stale.action.value, "stale_epoch").inc()
                return stale
            prior = await recorded_outcome(
                conn, self.consumer, identity, tenant_id=t, document_id=d
            )
            if prior is not None:
                outcome = Outcome.model_validate(prior)
                # a redelivery through intake wrote 'accepted' again: put the status back
                await self._reassert_replayed(conn, event)
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
                identity,
                tenant_id=t,
                document_id=d,
                source_seq=event.source_seq,
                outcome=outcome.to_json(),
            )
        result = "skipped" if outcome.skipped else "applied"
        DOCUMENTS_APPLIED.labels(outcome.action.value, result).inc()
        return outcome

    async def _older_generation(
        self, conn: AsyncConnection, event: DocEmbedded | DocControl | DocQuarantined
    ) -> Outcome | None:
        """The outcome of an event accepted before the document's last ``reset-seq``
        (an older ``seq_epoch``: a downstream or DLQ replay of a pre-reset change):
        stale, nothing changes (lifetest F14, ragline.order.epoch_stale). None when the
        event is of the current generation."""
        t, d = event.tenant_id, event.document_id
        current = await current_epoch(conn, t, d)
        if not epoch_stale(event.seq_epoch, current):
            return None
        _log_stale_generation(
            event,
            current,
            "accepted before the document's reset-seq; re-send it from the source (ragline sync)",
        )
        if isinstance(event, DocEmbedded):
            action = IndexAction.UPSERT
        elif isinstance(event, DocControl) and event.action == "delete":
            action = IndexAction.DELETE
        else:
            action = IndexAction.ACL
        state = await doc_store.get_state(conn, t, d)
        if state is None:
            return Outcome(action=action, generation=0, chunk_count=0, skipped=True, touched=(d,))
        return _unchanged(state, action)

    async def _recorded_before_reset(
        self, conn: AsyncConnection, ev: DocQuarantined, key: ContentKey
    ) -> bool:
        """Is a quarantine the connector recorded at intake (in the same batch write as
        its accepted changes) of an older generation? Then a ``reset-seq`` since lowered
        the status row it wrote below the version's key (a document never reset: never;
        lifetest ACL-2: applied, it raised the seq the reset had lowered and pinned the
        document again)."""
        t, d = ev.tenant_id, ev.document_id
        current = await current_epoch(conn, t, d)
        if current == 0:
            return False
        status = await read_status(conn, t, d)
        if status is None or status.key >= key:
            return False
        _log_stale_generation(
            ev, current, "quarantined by the connector before the document's reset-seq"
        )
        return True

    # ------------------------------------------------------------------ content
    async def _upsert(self, conn: AsyncConnection, ev: DocEmbedded) -> Outcome:
        t, d, meta = ev.tenant_id, ev.document_id, ev.meta
        if ev.embedding_dim != chunk_store.EMBEDDING_DIM:
            raise PermanentError(
                f"embedding_dim {ev.embedding_dim} != chunks.embedding dimension "
                f"{chunk_store.EMBEDDING_DIM} (a new model needs a migration)"
            )
        state = await doc_store.get_state(conn, t, d)
        key = content_key(ev.source_seq, deleted=False, content_hash=ev.content_hash)
        if state is not None and key <= _stored_key(state):
            await self._reassert_status(conn, state, key)
            return _unchanged(state, IndexAction.UPSERT)
        # the ACL with the greatest key: this upsert's own, unless the row (an ACL change
        # at this seq or later) or a change parked before the row existed is newer; on a
        # tie the upsert's own wins over its fast-path narrowing (docs/adr/0007). A
        # narrowing on the row is not a statement about this version: the newer version's
        # ACL recorded with its status narrows it instead (below)
        pending = await get_pending_acl(conn, t, d)
        own = (meta.acl_groups, ev.source_seq, ACL_FROM_UPSERT)
        full = state is not None and not _provisional(state)
        best = newest_acl(
            own,
            (state.acl_groups, state.acl_seq, state.acl_rank) if state and full else None,
            (pending.acl_groups, pending.acl_seq, ACL_FROM_CHANGE) if pending else None,
        )
        assert best is not None
        acl, acl_seq, acl_rank = best
        classification: str = meta.classification.value
        if best != own:
            kept = state.classification if state is not None else None
            if pending is not None and best[1:] == (pending.acl_seq, ACL_FROM_CHANGE):
                kept = pending.classification
            classification = kept or classification
        status = await read_status(conn, t, d)
        base = AclKey(acl_seq, acl_rank)
        newer = _newer_statement(status, key, base)
        if newer is not None and status is not None and status.acl is not None:
            acl = tuple(sorted(set(acl) & set(newer)))
            acl_seq, acl_rank = status.acl[1], status.acl[2]
            if state is not None and _provisional(state):  # its stricter classification
                classification = (
                    stricter_classification(classification, state.classification) or classification
                )
        # and every newer version quarantined before this one got here, not only the
        # newest statement (lifetest ACL-3); a full statement newer than one makes it moot
        for q in await quarantine_acls_above(conn, t, d, key):
            q_key = AclKey(q.key.seq, ACL_FROM_UPSERT)
            if q_key <= base:
                continue
            acl = tuple(sorted(set(acl) & set(q.groups)))
            classification = stricter_classification(classification, q.classification) or (
                classification
            )
            acl_seq, acl_rank = max(AclKey(acl_seq, acl_rank), q_key)
        fields = DocumentFields(
            acl_groups=acl,
            classification=classification,
            acl_seq=acl_seq,
            acl_rank=acl_rank,
            generation=(state.generation if state else 0) + 1,
            revision=(state.revision if state else 0) + 1,
            superseded=False,
            superseded_by=None,
        )
        rows = chunk_rows(ev, fields)
        await doc_store.upsert_document(conn, t, d, document_values(ev, fields))
        await chunk_store.write_chunks(conn, rows)
        await write_space_vectors(conn, rows)  # shadow/live spaces beyond chunks.embedding
        await chunk_store.delete_other_generations(conn, t, d, fields.generation)
        CHUNKS_WRITTEN.inc(len(rows))
        if pending is not None:
            await delete_pending_acl(conn, t, d)
        await prune_quarantine_acls(conn, t, d, key)
        touched = {d}
        touched.update(await refresh_supersession(conn, t, [d]))
        await write_status(
            conn,
            t,
            d,
            source_seq=ev.source_seq,
            status="indexed",
            stage="indexer",
            content_hash=ev.content_hash,
            findings=ev.findings.model_dump(mode="json"),
            acl=(acl, acl_seq, acl_rank),
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

    async def _reassert_replayed(
        self, conn: AsyncConnection, event: DocEmbedded | DocControl
    ) -> None:
        if isinstance(event, DocControl) and event.action != "delete":
            return  # ACL changes never write an intake status
        state = await doc_store.get_state(conn, event.tenant_id, event.document_id)
        if state is not None:
            deleted = isinstance(event, DocControl)
            key = content_key(event.source_seq, deleted=deleted, content_hash=event.content_hash)
            await self._reassert_status(conn, state, key)

    async def _reassert_status(
        self, conn: AsyncConnection, state: doc_store.DocumentState, key: ContentKey
    ) -> None:
        """A replay of the current version: put the status back if intake overwrote it."""
        if key == _stored_key(state):
            deleted = state.status == "deleted"
            await reassert_status(
                conn,
                state.tenant_id,
                state.document_id,
                source_seq=state.source_seq,
                content_hash=None if deleted else state.content_hash,
                status="deleted" if deleted else "indexed",
                stage="indexer",
            )

    # ------------------------------------------------------------------ control
    async def _delete(self, conn: AsyncConnection, ev: DocControl) -> Outcome:
        t, d = ev.tenant_id, ev.document_id
        state = await doc_store.get_state(conn, t, d)
        key = content_key(ev.source_seq, deleted=True)
        if state is not None and key <= _stored_key(state):
            await self._reassert_status(conn, state, key)
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
        await prune_quarantine_acls(conn, t, d, key)
        touched = {d}
        touched.update(await refresh_supersession(conn, t, [d]))
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
        rank = ACL_FROM_UPSERT if ev.acl.narrowing else ACL_FROM_CHANGE
        state = await doc_store.get_state(conn, t, d)
        if state is None:
            if not ev.acl.narrowing:  # overtook the first upsert: keep it for that upsert
                await put_pending_acl(
                    conn, t, d, acl_seq=ev.source_seq, acl_groups=groups, classification=cls
                )
                # the status row (or, for a document never seen, a new 'awaiting_content'
                # one) is read through its own ACL: it follows every change
                await set_status_acl(conn, t, d, acl_seq=ev.source_seq, acl_groups=groups)
                await mark_awaiting_content(conn, t, d, acl_seq=ev.source_seq, acl_groups=groups)
            return Outcome(
                action=IndexAction.ACL,
                generation=0,
                chunk_count=0,
                acl_groups_after=groups,
                skipped=True,
            )
        if ev.acl.narrowing and state.status == "indexed":  # at once, never wider
            narrowed = await self._narrow(conn, state, groups, cls, ev.source_seq)
            return narrowed or _unchanged(state, IndexAction.ACL)
        if ev.acl.narrowing:  # nothing readable: never wider than the row states
            groups = tuple(sorted(set(groups) & set(state.acl_groups)))
            cls = stricter_classification(state.classification, cls)
        new_key = AclKey(ev.source_seq, rank)
        stored_key = AclKey(state.acl_seq, state.acl_rank)
        if (
            not acl_applies(new_key, stored_key)
            and rank == ACL_FROM_CHANGE
            and state.status == "indexed"
            and _provisional(state)
            and ev.source_seq >= state.source_seq
        ):
            # overtaken by a narrowing of a newer version (its fast path or its quarantine,
            # ADR 0007) that was sent after it: it still revokes, as an intersection (it
            # never widens: a group it grants waits for a newer full statement)
            narrowed = await self._narrow(conn, state, groups, cls, stored_key.seq)
            return narrowed or _unchanged(state, IndexAction.ACL)
        same = groups == state.acl_groups and cls in (None, state.classification)
        if not acl_applies(new_key, stored_key) or (new_key == stored_key and same):
            return _unchanged(state, IndexAction.ACL)
        return await self._restamp(conn, state, groups, cls, new_key)

    async def _restamp(
        self,
        conn: AsyncConnection,
        state: doc_store.DocumentState,
        groups: tuple[str, ...],
        cls: str | None,
        key: AclKey,
    ) -> Outcome:
        """Apply an ACL statement to the document row, its chunks and its status."""
        t, d = state.tenant_id, state.document_id
        live = state.status == "indexed"
        await doc_store.set_acl(
            conn,
            t,
            d,
            acl_seq=key.seq,
            acl_rank=key.rank,
            acl_groups=groups,
            classification=cls,
            revision=state.revision + (1 if live else 0),
        )
        await set_status_acl(conn, t, d, acl_seq=key.seq, acl_groups=groups, acl_rank=key.rank)
        touched = {d}
        if live:
            await chunk_store.restamp_acl(conn, t, d, acl_groups=groups, classification=cls)
            touched.update(await refresh_supersession(conn, t, [d]))
        return Outcome(
            action=IndexAction.ACL,
            generation=state.generation,
            chunk_count=state.chunk_count,
            acl_groups_before=state.acl_groups,
            acl_groups_after=groups,
            skipped=not live,
            touched=tuple(sorted(touched)),
        )

    async def _narrow(
        self,
        conn: AsyncConnection,
        state: doc_store.DocumentState,
        groups: Sequence[str],
        cls: str | None,
        seq: int,
    ) -> Outcome | None:
        """Narrow the indexed version to the groups a newer version states too (ADR 0007),
        with ACL key (seq, 0). Narrowings commute: one older than a narrowing on the row
        still applies (intersections in any order give the same ACL); a full statement
        newer than it (an ACL change, the version's own ACL) wins. None if nothing changes."""
        narrow_key = AclKey(seq, ACL_FROM_UPSERT)
        stored = AclKey(state.acl_seq, state.acl_rank)
        if not acl_applies(narrow_key, stored) and not _provisional(state):
            return None
        narrowed = tuple(sorted(set(groups) & set(state.acl_groups)))
        stricter = stricter_classification(state.classification, cls)
        if narrowed == state.acl_groups and stricter == state.classification:
            return None
        return await self._restamp(conn, state, narrowed, stricter, max(narrow_key, stored))

    # ------------------------------------------------------------------ quarantine
    async def apply_quarantine(self, conn: AsyncConnection, ev: DocQuarantined) -> Outcome | None:
        """Record why the version was stopped (guarded by its content key; idempotent by
        nature). The version's ACL still narrows what stays indexed of an older version
        (docs/adr/0007): that ACL change is the outcome returned (None if nothing changed)."""
        t, d = ev.tenant_id, ev.document_id
        outcome: Outcome | None = None
        async with conn.transaction():
            await doc_store.lock_document(conn, t, d)
            # a quarantine of a change accepted before a reset-seq records nothing. The
            # connector's own carries the source's envelope (not the stamped generation):
            # it is of the old generation when a reset lowered the status row it recorded
            key = content_key(ev.source_seq, deleted=False, content_hash=ev.content_hash)
            if ev.stage != "connector":
                stale = await self._older_generation(conn, ev) is not None
            else:
                stale = await self._recorded_before_reset(conn, ev, key)
            if stale:
                DOCUMENTS_APPLIED.labels("quarantine", "stale_epoch").inc()
                return None
            # the ACL the status is read through: the event's, unless an ACL change
            # already applied to the document row (or parked) is newer
            state = await doc_store.get_state(conn, t, d)
            pending = await get_pending_acl(conn, t, d)
            acl = newest_acl(
                (ev.meta.acl_groups, ev.source_seq, ACL_FROM_UPSERT) if ev.meta else None,
                (state.acl_groups, state.acl_seq, state.acl_rank) if state else None,
                (pending.acl_groups, pending.acl_seq, ACL_FROM_CHANGE) if pending else None,
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
            # and an older version indexed later (it may still be on its way): kept with
            # every other newer quarantine until a version or delete as new applies
            if ev.meta and (state is None or key > _stored_key(state)):
                entry = QuarantineAcl(
                    key, tuple(sorted(set(ev.meta.acl_groups))), ev.meta.classification.value
                )
                await add_quarantine_acl(conn, t, d, entry)
            # a version newer than the indexed one narrows it, whatever the status row
            # says since (intake may have recorded this quarantine, or a newer change,
            # already: lifetest F9/F12)
            live = state is not None and state.status == "indexed"
            if live and state is not None and ev.meta and key > _stored_key(state):
                cls = ev.meta.classification.value
                outcome = await self._narrow(conn, state, ev.meta.acl_groups, cls, ev.source_seq)
        DOCUMENTS_APPLIED.labels("quarantine", "applied").inc()
        return outcome
