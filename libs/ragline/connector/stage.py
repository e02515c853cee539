"""The connector Stage: ``source.changes`` in, ``doc.fetched`` / ``doc.control`` out.

Upserts are fetched, hashed and compared with what Postgres holds (``intake``);
deletes and ACL changes take the fast path to the indexer. The webhook is served by the
same process through the stage's ``http_app()`` (declared by ``runtime.stage``).
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar, NamedTuple
from urllib.parse import urlsplit

from ragline.config import Settings
from ragline.connector.fairness import InteractiveAdmission, TenantBudget
from ragline.connector.fetch import ContentFetcher, Fetched
from ragline.connector.intake import (
    Accepted,
    Decision,
    ImplausibleSequence,
    SeqRule,
    StatedAcl,
    StoredState,
    acl_statement,
    control_event,
    decide_before_fetch,
    decide_control,
    decide_upsert,
    failed_version_counts,
    fetched_event,
    narrowing_event,
    narrows,
    seq_implausible,
    upsert_identity,
)
from ragline.connector.metrics import DECISIONS
from ragline.connector.settings import ConnectorSettings
from ragline.connector.state import StateStore
from ragline.errors import PermanentError, QuarantineError
from ragline.events import (
    DocControl,
    DocFetched,
    DocumentMeta,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
    Topics,
)
from ragline.hashing import content_hash, meta_hash
from ragline.order import ContentKey, content_key
from ragline.runtime.stage import BatchConfig, Output, Results, Stage, StageContext

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["ConnectorStage", "effective_meta"]


def effective_meta(event: SourceUpsert) -> DocumentMeta:
    """The metadata the connector emits and hashes.

    Only deterministic additions (a MIME type guessed from the reference's file name),
    never anything from the fetch itself, so the same event always hashes the same.
    """
    meta = event.meta
    if meta.mime_type is None and event.content_ref is not None:
        loc = event.content_ref.location
        path = urlsplit(loc).path if event.content_ref.kind == "http" else loc
        guessed, _ = mimetypes.guess_type(path)
        if guessed:
            meta = meta.model_copy(update={"mime_type": guessed})
    return meta


_Change = SourceUpsert | SourceDelete | SourceAclChange
_Out = Output[DocFetched | DocControl]
_Key = tuple[str, str]


class ConnectorStage(Stage[_Change, DocFetched | DocControl]):
    name: ClassVar[str] = "connector"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.SOURCE_CHANGES.value,)
    # micro-batches: one Postgres lookup and one status write per batch, not per event
    batch: ClassVar[BatchConfig | None] = BatchConfig(max_records=64, linger_ms=20)
    fetch_concurrency: ClassVar[int] = 8

    def __init__(
        self,
        settings: Settings,
        cfg: ConnectorSettings,
        *,
        state: StateStore | None = None,
        fetcher: ContentFetcher | None = None,
    ) -> None:
        super().__init__(settings)
        self.cfg = cfg
        self.state = state or StateStore(settings.admin_dsn())
        self.fetcher = fetcher or ContentFetcher(self.cfg)
        self.seq_rule = SeqRule(
            max_source_seq=self.cfg.max_source_seq, max_seq_jump=self.cfg.max_seq_jump
        )
        # heavy documents and changes over their tenant's budget go bulk (docs/lanes.md)
        self.admission = InteractiveAdmission(
            TenantBudget(cfg.tenant_interactive_rate, cfg.tenant_interactive_burst),
            heavy_bytes=cfg.heavy_bytes,
        )

    async def open(self) -> None:
        await self.state.open()
        await self.fetcher.open()

    async def close(self) -> None:
        await self.fetcher.close()
        await self.state.close()

    def http_app(self) -> FastAPI | None:
        """The webhook, served by the runtime next to the consumer (None if not configured)."""
        if not self.cfg.webhook_enabled or not self.cfg.webhook_configured:
            return None
        from ragline.connector.webhook import create_app
        from ragline.runtime.publisher import EventPublisher

        settings = self.settings
        return create_app(self.cfg, lambda: EventPublisher(settings, service="connector-webhook"))

    async def process_batch(
        self, events: Sequence[_Change], ctx: StageContext
    ) -> Results[DocFetched | DocControl]:
        """One lookup and one status write per batch; decisions in input order, so a
        newer event earlier in the batch makes an older one after it stale."""
        results: list[Sequence[_Out] | BaseException] = [[] for _ in events]
        changes: dict[int, _Change] = dict(enumerate(events))
        try:
            stored = await self.state.get_many(
                (e.tenant_id, e.document_id) for e in changes.values()
            )
        except Exception as exc:  # the runtime retries the whole batch
            return [exc] * len(events)
        for i, ev in list(changes.items()):
            # every change accepted carries the document's reset generation (whatever
            # the source sent): one accepted before a reset-seq is stale downstream
            epoch = st.seq_epoch if (st := stored.get(_key(ev))) is not None else 0
            if ev.seq_epoch != epoch:
                changes[i] = ev = ev.model_copy(update={"seq_epoch": epoch})
            why = seq_implausible(stored.get(_key(ev)), ev.source_seq, self.seq_rule)
            if why is not None:  # dead-lettered with the reason; nothing else happens
                DECISIONS.labels(Decision.IMPLAUSIBLE_SEQ.value).inc()
                results[i] = ImplausibleSequence(why)
                del changes[i]
        upserts = {i: ev for i, ev in changes.items() if isinstance(ev, SourceUpsert)}
        metas = {i: (m, meta_hash(m)) for i, ev in upserts.items() for m in (effective_meta(ev),)}
        need = {
            i: ev
            for i, ev in upserts.items()
            if decide_before_fetch(stored.get(_key(ev)), ev, metas[i][1]) is None
            or _accepted_at(stored.get(_key(ev)), ev)  # passed on again? (migration 0140)
        }
        fetched = await self._fetch_all(need)
        view = dict(stored)  # the stored state as this batch's earlier events left it
        accepts: dict[_Key, _Intake] = {}
        acls: dict[_Key, tuple[tuple[str, ...], int]] = {}  # the status row's ACL (0007)
        # unchanged restatements at a newer seq: (statement, the batch indices) per document
        advances: dict[_Key, tuple[StatedAcl, list[int]]] = {}
        # the newest ACL statement accepted per document (lifetest ACL-1): an upsert's
        # (its digest, at the seq in ``acls``), an ACL change's (with the batch indices)
        stated: dict[_Key, str] = {}
        acl_changes: dict[_Key, tuple[StatedAcl, list[int]]] = {}
        # the generation each document's changes were stamped with (0090)
        epochs = {k: st.seq_epoch for k, st in stored.items()}
        # every change accepted per document, recorded with the batch's writes (0140): a
        # redelivery of the batch passes them on again (ADR 0008, amendment (3))
        log: dict[_Key, list[Accepted]] = {}
        acl_log: dict[_Key, list[Accepted]] = {}
        # (index, key, decision, outputs or the version's failure) awaiting the write
        waiting: list[tuple[int, _Key, Decision, list[_Out] | BaseException]] = []
        for i, ev in changes.items():
            key = _key(ev)
            st = view.get(key)
            if not isinstance(ev, SourceUpsert):
                decision = decide_control(st, ev)
                control = Output(topic=Topics.DOC_CONTROL.value, event=control_event(ev))
                identity = control.event.event_id
                if decision is Decision.STALE:
                    known = st is not None and st.accepted_again(identity) is not None
                    results[i] = (
                        self._again([control], ctx) if known else self._nothing(ev, decision, ctx)
                    )
                    continue
                if isinstance(ev, SourceAclChange):
                    DECISIONS.labels("acl").inc()
                    statement = acl_statement(ev, kept=st.classification if st else None)
                    view[key] = _seen(st, ev.source_seq, acl=True).with_statement(statement)
                    held, idx = acl_changes.get(key, (statement, []))
                    acl_changes[key] = (_newest(held, statement), [*idx, i])
                    acl_log.setdefault(key, []).append(Accepted("acl", ev.source_seq, identity))
                    results[i] = [control]
                else:  # a delete is a content change: recorded like one (no hash)
                    _note(accepts, key, _Intake(ev.source_seq, None))
                    log.setdefault(key, []).append(Accepted("delete", ev.source_seq, identity))
                    view[key] = _seen(st, ev.source_seq, acl=False)
                    waiting.append((i, key, Decision.DELETE, [control]))
                continue
            meta, mhash = metas[i]
            early = decide_before_fetch(st, ev, mhash)
            got = fetched.get(i)
            again = self._upsert_again(early, st, ev, meta, mhash, got, ctx)
            if again is not None:
                results[i] = again
                continue
            if early in _LOSES and isinstance(got, BaseException) and _accepted_at(st, ev):
                results[i] = got  # accepted already: retried, never dropped
                continue
            if early is not None or got is None:
                results[i] = self._nothing(ev, early or Decision.STALE, ctx)
                if early is Decision.UNCHANGED:
                    _restated(view, key, acl_statement(ev, meta), advances, i)
                continue
            if isinstance(got, BaseException):
                results[i] = got
                # still seen (ADR 0008): an older version after it in the batch is stale;
                # a quarantine (or a last failed attempt: dead-lettered, recorded as
                # quarantined) is recorded with the batch, before any later batch reads
                if failed_version_counts(st, ev):
                    view[key] = _seen(
                        st, ev.source_seq, acl=False, content_hash=ev.content_hash, failed=True
                    )
                    final = _final_failure(got, ctx.attempt, self.settings.max_attempts)
                    if final is not None:
                        _note(accepts, key, _Intake(ev.source_seq, ev.content_hash, final))
                        _acl(acls, stated, key, ev, meta)
                        view[key] = view[key].with_statement(acl_statement(ev, meta))
                        waiting.append((i, key, Decision.CONTENT, got))
                continue
            chash = content_hash(got.data)
            decision = decide_upsert(
                st, source_seq=ev.source_seq, content_hash=chash, meta_hash=mhash, meta=meta
            )
            again = self._upsert_again(decision, st, ev, meta, mhash, got, ctx)
            if again is not None:
                results[i] = again
                continue
            if decision not in (Decision.CONTENT, Decision.METADATA):
                results[i] = self._nothing(ev, decision, ctx)
                if decision is Decision.UNCHANGED:
                    _restated(view, key, acl_statement(ev, meta), advances, i)
                continue
            _note(accepts, key, _Intake(ev.source_seq, chash))
            _acl(acls, stated, key, ev, meta)
            statement = acl_statement(ev, meta)
            view[key] = _seen(st, ev.source_seq, acl=False, content_hash=chash).with_statement(
                statement
            )
            doc = fetched_event(
                ev, meta=meta, data=got.data, content_hash=chash, change=decision, meta_digest=mhash
            )
            log.setdefault(key, []).append(
                Accepted(decision.value, ev.source_seq, doc.event_id, chash)
            )
            waiting.append((i, key, decision, self._upsert_outputs(st, ev, meta, doc)))
        if advances:  # the restated seq is held too: an older version after it is stale
            restated = {k: (s, epochs.get(k, 0)) for k, (s, _) in advances.items()}
            # refusals only (ChangedMeanwhile): decided again, the runtime retries them
            await self._spread(self.state.record_restated(restated), advances, results, ctx)
        if acl_changes:  # recorded as accepted statements (ACL-1), or stale meanwhile
            acl_stated = {k: (s, epochs.get(k, 0)) for k, (s, _) in acl_changes.items()}
            write = self.state.record_acl_stated(acl_stated, log=acl_log)
            await self._spread(write, acl_changes, results, ctx, changes)
        if waiting:
            try:
                written = await self.state.record_accepted_each(
                    {k: (a.seq, a.content_hash) for k, a in accepts.items()},
                    acls=acls,
                    quarantined={
                        k: (a.quarantine.reason_code, a.quarantine.reason)
                        for k, a in accepts.items()
                        if a.quarantine is not None
                    },
                    stated=stated,
                    epochs={k: epochs.get(k, 0) for k in accepts},
                    log=log,
                )
            except Exception as exc:
                for i, *_ in waiting:
                    results[i] = exc
                return results
            for i, key, decision, then in waiting:
                ok = written.get(key, False)
                if isinstance(ok, BaseException):  # this document's write failed alone
                    results[i] = ok
                elif isinstance(then, BaseException):
                    results[i] = then  # the runtime publishes doc.quarantined (the indexer)
                elif ok:
                    results[i] = then
                    self._accepted(then[-1], decision, ctx)
                else:  # a newer event moved the status on meanwhile
                    results[i] = self._nothing(changes[i], Decision.STALE, ctx)
        return results

    def _upsert_outputs(
        self, st: StoredState | None, ev: SourceUpsert, meta: DocumentMeta, doc: DocFetched
    ) -> list[_Out]:
        """An accepted upsert's ``doc.fetched`` (its lane chosen), after its fast-path
        narrowing when its ACL takes something from readers (ADR 0007)."""
        doc = self.admission.place(doc)  # heavy or over budget: bulk (ADR 0012)
        outs: list[_Out] = [Output(topic=Topics.DOC_FETCHED.value, event=doc)]
        if narrows(st, meta, acl_statement(ev, meta)):  # revocation never waits
            DECISIONS.labels(Decision.NARROWING.value).inc()
            outs.insert(0, Output(topic=Topics.DOC_CONTROL.value, event=narrowing_event(ev, meta)))
        return outs

    def _upsert_again(
        self,
        decision: Decision | None,
        st: StoredState | None,
        ev: SourceUpsert,
        meta: DocumentMeta,
        mhash: str,
        got: Fetched | BaseException | None,
        ctx: StageContext,
    ) -> list[_Out] | None:
        """The outputs of an upsert intake accepted already (its batch was redelivered
        after a crash before the offset commit: ``decision``, against the batch's own
        newer change, would drop it), passed on again with the decision it was accepted
        with; None if it is not so (not dropped, not fetched, not in the row's log)."""
        if decision not in _LOSES or not isinstance(got, Fetched):
            return None
        chash = content_hash(got.data)
        held = (
            None
            if st is None
            else st.accepted_again(upsert_identity(ev, content_hash=chash, meta_digest=mhash))
        )
        if held is None or held.kind not in (Decision.CONTENT.value, Decision.METADATA.value):
            return None
        doc = fetched_event(
            ev,
            meta=meta,
            data=got.data,
            content_hash=chash,
            change=Decision(held.kind),
            meta_digest=mhash,
        )
        return self._again(self._upsert_outputs(st, ev, meta, doc), ctx)

    def _again(self, outs: list[_Out], ctx: StageContext) -> list[_Out]:
        self._accepted(outs[-1], Decision.AGAIN, ctx)
        return outs

    async def _spread(
        self,
        write: Awaitable[Mapping[_Key, bool | BaseException]],
        held: Mapping[_Key, tuple[StatedAcl, list[int]]],
        results: list[Sequence[_Out] | BaseException],
        ctx: StageContext,
        changes: Mapping[int, _Change] | None = None,
    ) -> None:
        """One of the batch's per-document writes (``held``: its batch indices per key):
        an exception of the whole write, or one key's error, is that key's changes' result;
        a key the write refused (False) makes its changes stale (``changes``)."""
        try:
            outcome = dict(await write)
        except Exception as exc:
            outcome = dict.fromkeys(held, exc)
        for k, ok in outcome.items():
            for i in held[k][1]:
                if isinstance(ok, BaseException):
                    results[i] = ok
                elif not ok and changes is not None:
                    results[i] = self._nothing(changes[i], Decision.STALE, ctx)

    async def _fetch_all(self, need: dict[int, SourceUpsert]) -> dict[int, Fetched | BaseException]:
        gate = asyncio.Semaphore(self.fetch_concurrency)

        async def one(i: int, ev: SourceUpsert) -> tuple[int, Fetched | BaseException]:
            async with gate:
                try:
                    return i, await self.fetcher.obtain(ev)
                except Exception as exc:  # per document: one bad reference fails only itself
                    return i, exc

        return dict(await asyncio.gather(*(one(i, ev) for i, ev in need.items())))

    @staticmethod
    def _accepted(out: _Out, decision: Decision, ctx: StageContext) -> None:
        DECISIONS.labels(decision.value).inc()
        ev = out.event
        fields = {
            "document_id": ev.document_id,
            "decision": decision.value,
            "source_seq": ev.source_seq,
        }
        if isinstance(ev, DocFetched):
            fields["size_bytes"] = ev.size_bytes
        ctx.logger.info("accepted", extra={"fields": fields})

    @staticmethod
    def _nothing(event: _Change, decision: Decision, ctx: StageContext) -> list[_Out]:
        DECISIONS.labels(decision.value).inc()
        ctx.logger.info(
            "dropped",
            extra={
                "fields": {
                    "document_id": event.document_id,
                    "decision": decision.value,
                    "source_seq": event.source_seq,
                }
            },
        )
        return []


# the decisions an upsert already accepted by a crashed delivery of its batch can get on
# its redelivery (the batch's own newer change is held): it is then passed on again
_LOSES = (Decision.STALE, Decision.SEQ_CONFLICT)


def _accepted_at(st: StoredState | None, ev: SourceUpsert) -> bool:
    return st is not None and st.upsert_accepted_at(ev.source_seq)


def _key(ev: _Change) -> _Key:
    return (ev.tenant_id, ev.document_id)


def _final_failure(exc: BaseException, attempt: int, max_attempts: int) -> QuarantineError | None:
    """How a failed fetch ends when this attempt is its last (the runtime's rule: a
    permanent error at once, anything else after ``max_attempts``): its quarantine, or
    the runtime's 'dead_lettered' one; None while it will be retried."""
    if isinstance(exc, QuarantineError):
        return exc
    if not isinstance(exc, PermanentError) and attempt < max_attempts:
        return None
    return QuarantineError(
        "dead_lettered",
        f"connector could not fetch this version ({type(exc).__name__} after {attempt} "
        "attempt(s)); it is in the dead-letter topic (ragline dlq replay)",
    )


def _restated(
    view: dict[_Key, StoredState],
    key: _Key,
    statement: StatedAcl,
    advances: dict[_Key, tuple[StatedAcl, list[int]]],
    i: int,
) -> None:
    """An unchanged upsert (the indexed bytes, metadata and ACL again) at a newer seq:
    noted for the batch's status write (the status row's seq moves up to it, lifetest
    F13, with its ACL statement) and in ``view`` for later events of the batch."""
    st = view.get(key)
    seq = statement.seq
    if st is None or st.pending_seq is None or seq <= st.pending_seq:
        return
    held, idx = advances.get(key, (statement, []))
    advances[key] = (_newest(held, statement), [*idx, i])
    view[key] = replace(st, pending_seq=seq).with_statement(statement)


class _Intake(NamedTuple):
    """A content change recorded by the batch's status write."""

    seq: int
    content_hash: str | None  # None: a delete (or a quarantined version without a hash)
    quarantine: QuarantineError | None = None  # the version was quarantined at intake

    @property
    def key(self) -> ContentKey:
        deleted = self.content_hash is None and self.quarantine is None
        return content_key(self.seq, deleted=deleted, content_hash=self.content_hash)


def _seen(
    st: StoredState | None,
    seq: int,
    *,
    acl: bool,
    content_hash: str | None = None,
    failed: bool = False,
) -> StoredState:
    """``st`` after an event at ``seq`` was passed on (for later events of the batch);
    ``failed``: an upsert whose content could not be obtained (``content_hash``: the
    source's, if it stated one)."""
    st = st or StoredState()
    if acl:
        return replace(st, acl_seq=max(st.acl_seq or 0, seq))
    held = StoredState(
        pending_seq=st.pending_seq, pending_status=st.pending_status, pending_hash=st.pending_hash
    ).newest_key()
    new = content_key(seq, deleted=not failed and content_hash is None, content_hash=content_hash)
    if held is not None and held > new:
        return st
    status = "quarantined" if failed else "accepted"
    return replace(st, pending_seq=seq, pending_status=status, pending_hash=content_hash)


def _note(accepts: dict[_Key, _Intake], key: _Key, change: _Intake) -> None:
    """One status write per document and batch: the greatest change."""
    if key not in accepts or accepts[key].key <= change.key:
        accepts[key] = change


def _acl(
    acls: dict[_Key, tuple[tuple[str, ...], int]],
    stated: dict[_Key, str],
    key: _Key,
    ev: SourceUpsert,
    meta: DocumentMeta,
) -> None:
    """The status row's ACL (ADR 0007) and the accepted statement (its digest, lifetest
    ACL-1): the newest upsert's of the batch."""
    if key not in acls or acls[key][1] <= ev.source_seq:
        acls[key] = (meta.acl_groups, ev.source_seq)
        stated[key] = acl_statement(ev, meta).digest


def _newest(held: StatedAcl, new: StatedAcl) -> StatedAcl:
    """The newer of two statements by ACL key; on a tie the later one (source order)."""
    return new if new.key >= held.key else held
