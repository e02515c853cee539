"""The lifecycle state machine (a uniquely named module, imported directly): random
source changes for 2 tenants x 3 documents (the same document ids in both tenants),
delivered through the in-process pipeline in random interleavings, checked after every
settle against the reference model.

``FEATURES`` name the kinds of step that exercise one of issue 12's defects; a run
enables a subset (``RAGLINE_LIFECYCLE_FEATURES``: comma-separated, ``all`` or
``none``). Everything else (upserts of content, metadata, ACL or all of them, newer and
older seqs, deletes, ACL changes, quarantined versions, redeliveries, replays of whole
topics, crashes between effect and commit, stage restarts) is always on.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule
from lifecycle_model import ACLS, PRINCIPALS, DocModel, Upsert, Version, VersionKind
from lifecycle_world import RESTARTABLE, SOURCE_TYPE, World, check_document, check_search

from ragline.events import (
    BULK,
    INTERACTIVE,
    DocumentMeta,
    EventBase,
    Lane,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
    Topics,
    lane_of_topic,
    lane_topic,
)
from ragline.hashing import content_hash
from ragline.ops.seq_reset import reset_seq
from ragline.platform.stack.testing import unique_tenant
from ragline.runtime.lanes import with_lane

DOCS = ("lt:alpha", "lt:beta/Ünïcode name.md", "lt:gamma")

# feature -> the issue 12 defect it exercises
FEATURES: dict[str, str] = {
    "reused_event_ids": "defect 1: event ids reused across documents and tenants",
    "quarantine_acl": "defect 2: a quarantined version changes the ACL",
    "equal_seq_control": "defect 3: ACL change or delete at the current seq",
    "equal_seq_upsert": "defect 3: two different upserts with one seq",
    "redelivered_control": "defect 3: a delete or ACL change delivered again (equal seq)",
    "poison": "defect 4: an event Postgres cannot store fails its batch neighbours",
    "deleted_gone": "defect 7: a deleted document is gone for every reader",
    "older_after_quarantine": "an older upsert after a never-indexed quarantined version "
    "is indexed (lifetest F9)",
    "lanes": "issue 18: changes sent in the interactive or the bulk lane (a newer "
    "interactive version overtakes an older bulk one), replays in the bulk lane",
    "good_after_quarantine": "the last good bytes stated again after a quarantined version "
    "are dropped as unchanged (lifetest F10)",
    "reset_seq": "ragline documents reset-seq between changes, then redeliveries and new "
    "changes above and below the new seq",
    "replay_after_reset": "a downstream topic (doc.fetched, doc.embedded, ...) replayed "
    "after a reset-seq re-applied an old version over a newer ACL change: a revoked group "
    "read it again (lifetest F14; fixed by the reset generation, seq_epoch)",
    "unchanged_restatement": "the indexed bytes and metadata stated again at a newer seq "
    "were dropped without holding the seq, and did not restate an ACL changed since "
    "(lifetest F13)",
    "acl_revert_in_flight": "an ACL change, then the last upsert (same bytes, title and "
    "ACL) again before the change reached the indexer: the upsert was dropped as unchanged "
    "and the change won (a granted group kept reading, a revoked one came back; "
    "lifetest ACL-1)",
    "reset_in_flight": "ragline documents reset-seq while changes the connector accepted "
    "are still on their way to the indexer: refused as of the old generation, the status "
    "stayed 'accepted' for ever (lifetest ACL-2)",
    "crash_redelivery": "a connector batch crashed after its status write and before its "
    "offset commit, then redelivered: its changes older than its newest one of a document "
    "(a delete, an ACL change, a version that revokes a group) were stale against that "
    "newest one; with a quarantined version newest, a deleted document or a revoked group "
    "read the previous version again (ADR 0008 amendment (3))",
}
# the features whose fix is on main (every other one is exercised by a strict xfail)
FIXED: frozenset[str] = frozenset(FEATURES)


def enabled_features() -> frozenset[str]:
    raw = os.environ.get("RAGLINE_LIFECYCLE_FEATURES", "").strip()
    if not raw:
        return FIXED
    if raw == "all":
        return frozenset(FEATURES)
    if raw == "none":
        return frozenset()
    names = frozenset(x.strip() for x in raw.split(",") if x.strip())
    unknown = names - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown lifecycle features {sorted(unknown)}; known: {list(FEATURES)}")
    return names


SeqHow = str  # "next" | "gap" | "equal" | "older"
# source events a broker will carry but Postgres cannot store; sent as raw JSON (the
# contract may reject them: then they are dead letters, which is fine)
POISONS = ("nul_id", "huge_seq", "nul_title", "nul_metadata")
REPLAYABLE = (
    Topics.SOURCE_CHANGES.value,
    Topics.DOC_FETCHED.value,
    Topics.DOC_EMBEDDED.value,
    Topics.DOC_CONTROL.value,
    Topics.DOC_QUARANTINED.value,
)
Chooser = Callable[[list[str]], tuple[str, int, bool]]
# a source change as the model sees it: (document, kind, Upsert | seq | (seq, acl),
# a quarantined version?)
Change = tuple[tuple[str, str], str, object, bool]


def fifo(pending: list[str]) -> tuple[str, int, bool]:
    """The pipeline's natural order: upstream topics first, whole batches, no crash."""
    order = (
        Topics.SOURCE_CHANGES.value,
        Topics.DOC_CONTROL.value,
        Topics.DOC_FETCHED.value,
        Topics.DOC_PARSED.value,
        Topics.DOC_SCANNED.value,
        Topics.DOC_CHUNKED.value,
        Topics.DOC_ENRICHED.value,
        Topics.DOC_EMBEDDED.value,
        Topics.DOC_QUARANTINED.value,
    )
    # interactive first, then the bulk lane (as a stage serves them)
    order = order + tuple(lane_topic(t, BULK) for t in order)
    return min(pending, key=lambda t: order.index(t) if t in order else 99), 64, False


class LifecycleMachine(RuleBasedStateMachine):
    world: ClassVar[World]
    features: ClassVar[frozenset[str]] = FIXED
    stats: ClassVar[dict[str, int]] = {}  # over a run: examples, changes, settles, ...

    def __init__(self) -> None:
        super().__init__()
        self.tenants = (unique_tenant("lca"), unique_tenant("lcb"))
        self.model = {(t, d): DocModel() for t in self.tenants for d in DOCS}
        self.hi = {k: 0 for k in self.model}  # the highest seq sent per document
        self.last_up: dict[tuple[str, str], Upsert] = {}
        self.sent: list[tuple[str, EventBase]] = []
        self.sent_changes: list[Change] = []  # the model's view of each of ``sent``
        self.by_body: dict[bytes, Change] = {}  # the same, by published body (replays)
        self.ids: list[str] = []
        self.tag = uuid.uuid4().hex[:8]
        self.n = 0
        self.tokens: set[str] = set()
        self.hashes: dict[str, str] = {}  # version word -> content hash
        self.steps: list[str] = []  # a readable log, printed with a failure
        self.poisoned: list[tuple[str, str]] = []
        self.resets = 0  # reset-seq steps in this example
        # changes sent since the last settle: (lane, a quarantined version?, upsert seq)
        self.unsettled: dict[tuple[str, str], list[tuple[Lane, bool, int | None]]] = {}
        self.lane: Lane = INTERACTIVE  # the lane of the next source change
        # documents with changes past the connector and not settled (reset in flight)
        self.past_intake: set[tuple[Any, Any]] = set()
        self.world.driver.history.clear()
        self._count("examples")

    @classmethod
    def _count(cls, what: str, n: int = 1) -> None:
        cls.stats[what] = cls.stats.get(what, 0) + n

    # ------------------------------------------------------------------ helpers
    def _key(self, t: int, d: str) -> tuple[str, str]:
        return (self.tenants[t], d)

    def _seq(self, key: tuple[str, str], how: SeqHow) -> int:
        hi = self.hi[key]
        s = {"next": hi + 1, "gap": hi + 5, "equal": hi, "older": max(0, hi - 2)}[how]
        self.hi[key] = max(hi, s)
        return s

    def _event_id(self, reuse: int | None) -> str:
        if reuse is not None and self.ids and "reused_event_ids" in self.features:
            return self.ids[reuse % len(self.ids)]
        eid = f"{self.tag}-{len(self.ids)}"
        self.ids.append(eid)
        return eid

    def _send(self, event: EventBase, change: Change) -> None:
        event = with_lane(event, self.lane)
        self._count(f"{event.event_type} ({event.priority})")
        self.sent.append((Topics.SOURCE_CHANGES.value, event))
        self.sent_changes.append(change)
        self.by_body[event.model_dump_json().encode()] = change
        self.world.driver.publish(Topics.SOURCE_CHANGES.value, event)

    def _again(self, change: Change, lane: Lane) -> None:
        """A source change delivered again: nothing, unless the model forgot it (a
        ``reset-seq`` dropped it with the ledger entries above the new seq): then it
        applies like a new change."""
        key, kind, payload, quarantined = change
        model = self.model[key]
        before = len(model.changes)
        if kind == "upsert":
            assert isinstance(payload, Upsert)
            model.upsert(payload)
        elif kind == "delete":
            assert isinstance(payload, int)
            model.delete(payload)
        else:
            seq, acl = payload  # type: ignore[misc]
            model.acl_change(seq, acl)
        if len(model.changes) > before:  # it was new to the model
            seq = payload.seq if isinstance(payload, Upsert) else None
            self._crossing(key, quarantined=quarantined, lane=lane, upsert_seq=seq)

    def _version(self, kind: VersionKind) -> Version:
        self.n += 1
        v = Version(self.n, kind)
        self.tokens.add(v.token)
        self.hashes[v.token] = content_hash(v.text.encode())
        return v

    # ------------------------------------------------------------------ operations
    def do_upsert(
        self,
        t: int,
        d: str,
        how: SeqHow,
        content: str,  # "new" | "keep" | "good" (the bytes readers have now, if any)
        kind: VersionKind,
        acl: tuple[str, ...],
        title: str,  # "new" | "keep"
        reuse: int | None = None,
    ) -> None:
        key = self._key(t, d)
        prev = self.last_up.get(key)
        current = self.model[key].current
        if content == "keep" and prev is not None and kind == "ok":
            version = prev.version
        elif content == "good" and current is not None and kind == "ok":
            version = current
        else:
            version = self._version(kind)
        if title == "keep" and prev is not None:
            name = prev.title
        else:
            self.n += 1
            name = f"Runbook number {self.n}"
        if version.kind == "chunkfail":  # the world's chunker quarantines it
            self.world.chunker_refuses.add((key[0], self.hashes[version.token]))
        seq = self._seq(key, how)
        up = Upsert(seq, version, tuple(sorted(acl)), name)
        self.last_up[key] = up
        ev = SourceUpsert(
            event_id=self._event_id(reuse),
            tenant_id=key[0],
            document_id=d,
            source_seq=seq,
            meta=DocumentMeta(source_type=SOURCE_TYPE, title=name, acl_groups=up.acl),
            content_text=version.text,
        )
        self.steps.append(f"upsert t{t} {d} seq={seq} {version.token}/{kind} acl={acl} {name!r}")
        self.model[key].upsert(up)
        self._crossing(key, quarantined=version.kind != "ok", upsert_seq=seq)
        self._send(ev, (key, "upsert", up, version.kind != "ok"))

    def _crossing(
        self,
        key: tuple[str, str],
        *,
        quarantined: bool,
        lane: Lane | None = None,
        upsert_seq: int | None = None,
    ) -> None:
        """Two changes of the document sent in different lanes since the last settle,
        where the one the connector sees first decides, not the send order the model
        follows: a quarantined version and another change (ADR 0008, an older change
        after a quarantined version is stale; ADR 0007, one before it stays, narrowed),
        or two upserts at one seq (the same bytes with other metadata: the first seen
        wins, the other is a seq_conflict). The stores must still agree."""
        lane = lane or self.lane
        sent = self.unsettled.setdefault(key, [])
        if any(
            other != lane and (was_q != quarantined or (seq is not None and seq == upsert_seq))
            for other, was_q, seq in sent
        ):
            self.model[key].exact = False
            self.model[key].unsure = True
        sent.append((lane, quarantined, upsert_seq))

    def do_delete(self, t: int, d: str, how: SeqHow, reuse: int | None = None) -> None:
        key = self._key(t, d)
        seq = self._seq(key, how)
        self.steps.append(f"delete t{t} {d} seq={seq}")
        self.model[key].delete(seq)
        self._crossing(key, quarantined=False)
        self._send(
            SourceDelete(
                event_id=self._event_id(reuse), tenant_id=key[0], document_id=d, source_seq=seq
            ),
            (key, "delete", seq, False),
        )

    def do_acl(
        self, t: int, d: str, how: SeqHow, acl: tuple[str, ...], reuse: int | None = None
    ) -> None:
        key = self._key(t, d)
        seq = self._seq(key, how)
        self.steps.append(f"acl t{t} {d} seq={seq} acl={acl}")
        self.model[key].acl_change(seq, tuple(sorted(acl)))
        self._crossing(key, quarantined=False)
        self._send(
            SourceAclChange(
                event_id=self._event_id(reuse),
                tenant_id=key[0],
                document_id=d,
                source_seq=seq,
                acl_groups=acl,
            ),
            (key, "acl", (seq, tuple(sorted(acl))), False),
        )

    def do_redeliver(self, i: int) -> None:
        """The same source event again (same id, same body): changes nothing (unless a
        reset-seq made it new again)."""
        sent = list(zip(self.sent, self.sent_changes, strict=True))
        if "redelivered_control" not in self.features:
            sent = [s for s in sent if isinstance(s[0][1], SourceUpsert)]
        if not sent:
            return
        (topic, ev), change = sent[i % len(sent)]
        self.steps.append(f"redeliver {ev.event_type} {ev.tenant_id[:5]} {ev.document_id}")
        self._count("redeliveries")
        self._again(change, ev.priority)
        self.world.driver.publish(topic, ev)

    def do_replay(self, topic: str) -> None:
        """Every record this example put on ``topic``, delivered again."""
        downstream = topic != Topics.SOURCE_CHANGES.value
        if self.resets and downstream and "replay_after_reset" not in self.features:
            return  # lifetest F14 switched off: see test_lifecycle_known_defects
        self.steps.append(f"replay {topic}")
        self._count("replays")
        # a replay is bulk work (`ragline dlq replay` defaults to the bulk lane)
        target = lane_topic(topic, BULK) if "lanes" in self.features else topic
        for body in list(self.world.driver.history.get(topic, ())):
            control = b'"source.delete"' in body or b'"source.acl"' in body
            if control and "redelivered_control" not in self.features:
                continue
            if (change := self.by_body.get(body)) is not None:
                self._again(change, BULK if "lanes" in self.features else INTERACTIVE)
            self.world.driver.publish_raw(target, body)

    def do_poison(self, t: int, kind: str) -> None:
        """A hostile upsert of a document outside the model: whatever becomes of it, its
        batch neighbours must not suffer and it must not stay ``accepted``."""
        self.n += 1
        doc = f"lt:poison-{self.n}"
        body: dict[str, Any] = {
            "event_type": "source.upsert",
            "event_id": self._event_id(None),
            "tenant_id": self.tenants[t],
            "document_id": doc + ("\x00x" if kind == "nul_id" else ""),
            "source_seq": 2**63 if kind == "huge_seq" else 1,
            "meta": {
                "source_type": SOURCE_TYPE,
                "title": "bad\x00title" if kind == "nul_title" else "poison",
                "acl_groups": ["g1"],
                "metadata": {"k": "v\x00v"} if kind == "nul_metadata" else {},
            },
            "content_text": "poison pill document",
        }
        self.steps.append(f"poison t{t} {doc} {kind}")
        self.poisoned.append((self.tenants[t], doc))
        self._count("poison events")
        self.world.driver.publish_raw(Topics.SOURCE_CHANGES.value, json.dumps(body).encode())

    def do_reset_seq(self, t: int, d: str, back: int) -> None:
        """Settle, then an operator's ``reset-seq`` of the document to ``back`` below the
        highest seq sent (the changes after it decide again, redeliveries included)."""
        key = self._key(t, d)
        if self.model[key].status is None:
            return  # no such document: the command refuses
        self.settle()
        self._reset(key, back)

    def _reset(self, key: tuple[str, str], back: int, note: str = "") -> None:
        d = key[1]
        to = max(0, self.hi[key] - back)
        self.steps.append(f"reset-seq {key[0][:5]} {d} --to {to} {note}".rstrip())
        self.resets += 1
        self._count("seq resets")
        assert self.world.admin is not None
        self.world.run(
            reset_seq(
                self.world.admin, tenant_id=key[0], document_id=d, to=to, actor="lt", reason="lt"
            )
        )
        self.model[key].reset_seq(to)

    def do_revert(self, t: int, d: str, acl: tuple[str, ...], lanes: tuple[Lane, Lane]) -> None:
        """An ACL change, then the document's last upsert stated again (same bytes, title
        and ACL, a new seq), as a source that reverts permissions with a full upsert does;
        each in its own lane (lifetest ACL-1)."""
        key = self._key(t, d)
        prev = self.last_up.get(key)
        if prev is None or prev.version.kind != "ok":
            return
        self._count("ACL reverts")
        self.lane = lanes[0]
        self.do_acl(t, d, "next", acl)
        self.lane = lanes[1]
        self.do_upsert(t, d, "next", "keep", "ok", prev.acl, "keep")

    def do_reset_in_flight(self, t: int, d: str, back: int) -> None:
        """``reset-seq`` after the connector accepted this settle's changes and before any
        later stage ran: what it accepted for the document is of the old generation and
        refused downstream; the status must not stay 'accepted' (lifetest ACL-2). Which of
        the changes still took effect (a quarantine the connector recorded itself does) is
        not modelled: the stores must agree until a newer change decides again."""
        key = self._key(t, d)
        if self.model[key].status is None:
            return
        intake = (Topics.SOURCE_CHANGES.value, lane_topic(Topics.SOURCE_CHANGES.value, BULK))
        driver = self.world.driver
        for topic in intake:  # the documents whose changes the connector takes now
            for body in driver.queues.get(topic, ()):
                try:
                    raw = json.loads(body)
                except ValueError:
                    continue
                self.past_intake.add((raw.get("tenant_id"), raw.get("document_id")))
            while driver.queues.get(topic):
                self.world.run(driver.deliver(topic, 64))
        self.steps.append("connector only")
        self._count("seq resets in flight")
        if key in self.past_intake:
            self.model[key].exact = False
            self.model[key].unsure = True
        self._reset(key, back, note="(changes in flight)")

    def do_restart(self, stage: str) -> None:
        self.steps.append(f"restart {stage}")
        self._count("stage restarts")
        self.world.run(self.world.driver.restart(stage))

    def settle(self, choose: Chooser = fifo) -> None:
        self.steps.append("settle")
        self.unsettled.clear()
        self.past_intake.clear()
        before = (self.world.driver.delivered, self.world.driver.crashes)
        self.world.run(self.world.driver.drain(choose))
        self._count("settles")
        self._count("messages delivered", self.world.driver.delivered - before[0])
        self._count("crashes (batch redelivered)", self.world.driver.crashes - before[1])
        self.check()

    def check(self) -> None:
        gone = "deleted_gone" in self.features
        world = self.world
        log = "\n  ".join(self.steps)
        for (tenant, d), model in self.model.items():
            seen = world.run(world.seen(tenant, d))
            where = f"[{tenant} {d}]\n  {log}\n"
            check_document(where, model, seen, self.hashes, deleted_gone=gone)
        for tenant, d in self.poisoned:
            status = world.run(world.seen(tenant, d)).status
            assert status != "accepted", f"[{tenant} {d}] stuck at 'accepted'\n  {log}"
        for tenant in self.tenants:
            for groups in PRINCIPALS:
                expect: dict[str, str | None] = {}
                for (t, d), m in self.model.items():
                    if t != tenant:
                        continue
                    if m.exact:
                        ok = m.visible_to(groups) and m.current is not None
                        expect[d] = m.current.token if ok and m.current else None
                    else:  # what Postgres holds decides
                        seen = world.run(world.seen(tenant, d))
                        row = seen.row
                        readable = (
                            row is not None
                            and row["status"] == "indexed"
                            and bool(set(row["acl_groups"]) & set(groups))
                        )
                        words = {w for c in seen.chunks for w in self.tokens if w in c["text"]}
                        expect[d] = next(iter(words)) if readable and words else None
                if not self.tokens:
                    continue
                results = world.run(world.search(tenant, groups, sorted(self.tokens)))
                check_search(f"search {tenant} {groups}\n  {log}\n", results, expect, self.tokens)

    # ------------------------------------------------------------------ rules
    def _how(self, data: Any, *, upsert: bool) -> SeqHow:
        choices = ["next", "next", "gap", "older"]
        feature = "equal_seq_upsert" if upsert else "equal_seq_control"
        if feature in self.features:
            choices.append("equal")
        return str(data.draw(st.sampled_from(choices), label="seq"))

    def _reuse(self, data: Any) -> int | None:
        if "reused_event_ids" not in self.features:
            return None
        reuse: int | None = data.draw(st.none() | st.integers(0, 50), label="reuse event id")
        return reuse

    def _upsert(self, data: Any, t: int, d: str) -> None:
        m = self.model[self._key(t, d)]
        how = self._how(data, upsert=True)
        gated = "older_after_quarantine" not in self.features
        if gated and how == "older" and not m.live and m.status == "quarantined":
            how = "next"
        kinds: list[VersionKind] = ["ok", "ok", "ok", "empty", "oversize", "secret", "chunkfail"]
        kind = data.draw(st.sampled_from(kinds), label="kind")
        contents = ["new", "keep"]
        if "good_after_quarantine" in self.features:
            contents.append("good")
        acl = data.draw(st.sampled_from(ACLS), label="acl")
        if kind != "ok" and "quarantine_acl" not in self.features:
            # a quarantined version that changes the ACL is defect 2's
            acl = self.model[self._key(t, d)].acl or acl
        self.do_upsert(
            t,
            d,
            how,
            data.draw(st.sampled_from(contents), label="content"),
            kind,
            acl,
            data.draw(st.sampled_from(["new", "keep"]), label="title"),
            self._reuse(data),
        )

    def _change(self, data: Any) -> None:
        """One source change: mostly upserts, then ACL changes, deletes, poison."""
        t = data.draw(st.integers(0, 1), label="tenant")
        d = data.draw(st.sampled_from(DOCS), label="document")
        if "lanes" in self.features:
            self.lane = data.draw(st.sampled_from([INTERACTIVE, BULK]), label="lane")
        ops = ["upsert"] * 4 + ["acl"] * 2 + ["delete"]
        if "poison" in self.features:
            ops.append("poison")
        if "acl_revert_in_flight" in self.features:
            ops.append("revert")
        what = data.draw(st.sampled_from(ops), label="op")
        if what == "revert":  # of a document whose last upsert is indexable
            ok = [k for k, up in self.last_up.items() if up.version.kind == "ok"]
            if not ok:
                self._upsert(data, t, d)
                return
            tenant, d = data.draw(st.sampled_from(sorted(ok)), label="revert document")
            lanes = (self.lane, self.lane)
            if "lanes" in self.features:
                lanes = (self.lane, data.draw(st.sampled_from([INTERACTIVE, BULK]), label="lane"))
            acl = data.draw(st.sampled_from(ACLS), label="acl")
            self.do_revert(self.tenants.index(tenant), d, acl, lanes)
        elif what == "poison":
            self.do_poison(t, data.draw(st.sampled_from(POISONS), label="poison"))
        elif what == "upsert":
            self._upsert(data, t, d)
        elif what == "acl":
            acl = data.draw(st.sampled_from(ACLS), label="acl")
            self.do_acl(t, d, self._how(data, upsert=False), acl, self._reuse(data))
        else:
            self.do_delete(t, d, self._how(data, upsert=False), self._reuse(data))

    # two rules for changes, so changes outnumber the other steps two to one each
    @rule(data=st.data())
    def change(self, data: Any) -> None:
        self._change(data)

    @rule(data=st.data())
    def another_change(self, data: Any) -> None:
        self._change(data)

    @rule(i=st.integers(0, 1000))
    def redeliver(self, i: int) -> None:
        self.do_redeliver(i)

    @rule(topic=st.sampled_from(REPLAYABLE))
    def replay(self, topic: str) -> None:
        self.do_replay(topic)

    @rule(stage=st.sampled_from(RESTARTABLE))
    def restart(self, stage: str) -> None:
        self.do_restart(stage)

    @rule(data=st.data())
    def reset(self, data: Any) -> None:
        if "reset_seq" in self.features:
            t = data.draw(st.integers(0, 1), label="tenant")
            d = data.draw(st.sampled_from(DOCS), label="document")
            back = data.draw(st.integers(0, 6), label="back")
            flight = "reset_in_flight" in self.features and data.draw(st.booleans(), label="flight")
            if flight:
                self.do_reset_in_flight(t, d, back)
            else:
                self.do_reset_seq(t, d, back)

    @rule(data=st.data())
    def settle_random(self, data: Any) -> None:
        """Deliver in a random interleaving: any topic next (the fast path may overtake
        the slow one), random batch sizes, sometimes a crash after the effect."""

        def choose(pending: list[str]) -> tuple[str, int, bool]:
            topic = data.draw(st.sampled_from(pending), label="topic")
            n = data.draw(st.integers(1, 4), label="batch")
            crash = data.draw(st.integers(0, 11), label="crash") == 0
            if crash and lane_of_topic(topic)[0] == Topics.SOURCE_CHANGES.value:
                self._intake_crash(list(self.world.driver.queues[topic])[:n])
            return topic, n, crash

        self.settle(choose)

    def _intake_crash(self, bodies: list[bytes]) -> None:
        """The connector handles ``bodies``, dies before its offset commit, and gets them
        again: the second time its status row already holds the batch's newest change of
        each document, so the batch's older changes of it arrive "after" it. They are in
        the row's log of accepted changes and passed on again (``crash_redelivery``): the
        model holds exactly. Without that, where the newest change is a quarantined
        version, arrival order decided (an older change after a quarantined version is
        stale): the document was not exact until a newer change decided it again."""
        if "crash_redelivery" in self.features:
            return
        batch: dict[tuple[str, str], list[tuple[int, bool]]] = {}
        for body in bodies:
            change = self.by_body.get(body)
            if change is None:
                continue
            key, kind, payload, quarantined = change
            if isinstance(payload, Upsert):
                seq = payload.seq
            elif isinstance(payload, int):
                seq = payload
            else:
                seq = payload[0]  # type: ignore[index]
            content = kind in ("upsert", "delete")
            batch.setdefault(key, []).append((seq, quarantined and content))
        for key, changes in batch.items():
            top = max(seq for seq, _ in changes)
            if any(q and seq == top for seq, q in changes) and len(changes) > 1:
                self.model[key].exact = False
                self.model[key].unsure = True
                self.steps.append(f"(connector crash: {key[1]} decided by arrival)")

    def teardown(self) -> None:
        self.settle()
