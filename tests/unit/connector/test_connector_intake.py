"""Intake decision policy: stale / unchanged / metadata-only / content, and control events."""

from __future__ import annotations

import base64
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.connector.intake import (
    Decision,
    SeqRule,
    StoredState,
    acl_statement,
    control_event,
    decide_before_fetch,
    decide_control,
    decide_upsert,
    fetched_event,
    narrows,
    seq_implausible,
)
from ragline.events import (
    DocumentMeta,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
    change_identity,
)
from ragline.hashing import content_hash, meta_hash
from ragline.order import epoch_stale

H1 = content_hash(b"version one\n")
H2 = content_hash(b"version two\n")
META = DocumentMeta(acl_groups=("eng",), title="Doc")
M1 = meta_hash(META)
M2 = meta_hash(META.model_copy(update={"title": "Renamed"}))


def indexed(seq: int = 10, chash: str = H1, mhash: str = M1, **kw: object) -> StoredState:
    return StoredState(
        source_seq=seq, acl_seq=seq, content_hash=chash, meta_hash=mhash, status="indexed", **kw
    )


def upsert(seq: int = 10, **kw: object) -> SourceUpsert:
    return SourceUpsert(
        tenant_id="acme",
        document_id="wiki:a",
        source_seq=seq,
        meta=META,
        content_text="version one",
        **kw,
    )


def test_new_document_is_content() -> None:
    assert decide_upsert(None, source_seq=1, content_hash=H1, meta_hash=M1) is Decision.CONTENT


def test_same_hash_same_meta_is_unchanged() -> None:
    d = decide_upsert(indexed(), source_seq=11, content_hash=H1, meta_hash=M1)
    assert d is Decision.UNCHANGED


def test_same_hash_new_meta_is_metadata_only() -> None:
    d = decide_upsert(indexed(), source_seq=11, content_hash=H1, meta_hash=M2)
    assert d is Decision.METADATA


def test_new_hash_is_content() -> None:
    d = decide_upsert(indexed(), source_seq=11, content_hash=H2, meta_hash=M2)
    assert d is Decision.CONTENT


def test_older_seq_is_stale_even_with_new_content() -> None:
    d = decide_upsert(indexed(seq=10), source_seq=9, content_hash=H2, meta_hash=M1)
    assert d is Decision.STALE


def test_pending_newer_version_makes_older_event_stale() -> None:
    # seq 12 accepted but not indexed yet; seq 11 arrives late
    st_ = indexed(seq=10, pending_seq=12, pending_status="accepted")
    assert decide_upsert(st_, source_seq=11, content_hash=H2, meta_hash=M1) is Decision.STALE


def test_equal_seq_redelivery_is_not_stale() -> None:
    st_ = StoredState(pending_seq=10, pending_status="accepted", pending_hash=H1)
    assert decide_upsert(st_, source_seq=10, content_hash=H1, meta_hash=M1) is Decision.CONTENT


def test_newer_acl_change_does_not_make_content_stale() -> None:
    # the ACL fast path applied seq 12; a content change at seq 11 must still go through
    st_ = StoredState(source_seq=10, acl_seq=12, content_hash=H1, meta_hash=M1, status="indexed")
    assert decide_upsert(st_, source_seq=11, content_hash=H2, meta_hash=M1) is Decision.CONTENT


def test_tombstone_with_older_seq_is_recreated() -> None:
    st_ = StoredState(source_seq=10, content_hash=None, status="deleted")
    assert decide_upsert(st_, source_seq=11, content_hash=H1, meta_hash=M1) is Decision.CONTENT


def test_tombstone_with_newer_seq_wins() -> None:
    st_ = StoredState(source_seq=12, status="deleted")
    assert decide_upsert(st_, source_seq=11, content_hash=H1, meta_hash=M1) is Decision.STALE


def test_before_fetch_uses_source_hash_to_skip_unchanged() -> None:
    ev = upsert(seq=11, content_hash=H1)
    assert decide_before_fetch(indexed(), ev, M1) is Decision.UNCHANGED
    assert decide_before_fetch(indexed(), ev, M2) is None  # metadata changed: need bytes
    assert decide_before_fetch(indexed(), upsert(seq=11), M1) is None  # no claimed hash
    assert decide_before_fetch(indexed(seq=12), ev, M1) is Decision.STALE


def test_control_stale_rules() -> None:
    delete = SourceDelete(tenant_id="acme", document_id="wiki:a", source_seq=11)
    acl = SourceAclChange(tenant_id="acme", document_id="wiki:a", source_seq=11, acl_groups=("x",))
    assert decide_control(None, delete) is Decision.FORWARD
    assert decide_control(indexed(seq=10), delete) is Decision.FORWARD
    assert decide_control(indexed(seq=12), delete) is Decision.STALE
    # an ACL change newer than the delete does not block the delete...
    only_acl = StoredState(source_seq=10, acl_seq=12, status="indexed")
    assert decide_control(only_acl, delete) is Decision.FORWARD
    # ...but an older ACL change is stale against a newer ACL or upsert
    assert decide_control(only_acl, acl) is Decision.STALE
    assert decide_control(indexed(seq=12), acl) is Decision.STALE
    assert decide_control(indexed(seq=10), acl) is Decision.FORWARD


@given(
    stored_seq=st.integers(0, 100),
    pending=st.one_of(st.none(), st.integers(0, 100)),
    pending_status=st.sampled_from(["accepted", "indexed", "quarantined"]),
    pending_same=st.booleans(),
    seq=st.integers(0, 100),
    same_content=st.booleans(),
    same_meta=st.booleans(),
)
def test_decision_is_dropped_exactly_when_a_greater_content_key_is_held(
    stored_seq: int,
    pending: int | None,
    pending_status: str,
    pending_same: bool,
    seq: int,
    same_content: bool,
    same_meta: bool,
) -> None:
    phash = H1 if pending_same else H2
    stored = indexed(
        seq=stored_seq, pending_seq=pending, pending_status=pending_status, pending_hash=phash
    )
    chash = H1 if same_content else H2
    d = decide_upsert(stored, source_seq=seq, content_hash=chash, meta_hash=M1 if same_meta else M2)
    # the reference: the order rule (seq, upsert, content hash), nothing else
    held = max([(stored_seq, 0, H1)] + ([(pending, 0, phash)] if pending is not None else []))
    newer = pending is not None and (pending, 0, phash) > (stored_seq, 0, H1)
    quarantined_newer = pending_status == "quarantined" and newer
    if held > (seq, 0, chash):
        expected = Decision.SEQ_CONFLICT if held[0] == seq else Decision.STALE
    elif not same_content or pending_status == "accepted" or quarantined_newer:
        expected = Decision.CONTENT  # new bytes, something else in flight, or a quarantine
    elif same_meta:
        expected = Decision.UNCHANGED
    else:  # new metadata needs a new seq
        expected = Decision.METADATA if stored_seq < seq else Decision.SEQ_CONFLICT
    assert d is expected


def test_nothing_is_dropped_as_unchanged_while_another_change_is_in_flight() -> None:
    # seq 11 (other bytes, or a delete) accepted but not indexed; seq 12 reverts to the
    # indexed version: dropping it would let seq 11 win at the indexer
    flying = indexed(seq=10, pending_seq=11, pending_status="accepted", pending_hash=H2)
    assert decide_upsert(flying, source_seq=12, content_hash=H1, meta_hash=M1) is Decision.CONTENT
    assert decide_before_fetch(flying, upsert(seq=12, content_hash=H1), M1) is None
    done = indexed(seq=11, pending_seq=11, pending_status="indexed")
    assert decide_upsert(done, source_seq=12, content_hash=H1, meta_hash=M1) is Decision.UNCHANGED


def test_the_indexed_bytes_after_a_quarantined_version_are_a_change() -> None:
    # seq 11 was quarantined (readers keep seq 10 under a narrowed ACL, the status says
    # quarantined); seq 12 states seq 10's bytes and ACL again: the source is fine again
    q = indexed(seq=10, pending_seq=11, pending_status="quarantined", pending_hash=None)
    assert q.in_flight
    assert decide_upsert(q, source_seq=12, content_hash=H1, meta_hash=M1) is Decision.CONTENT
    assert decide_before_fetch(q, upsert(seq=12, content_hash=H1), M1) is None
    # a quarantine of an older version than the indexed one changes nothing
    old = indexed(seq=10, pending_seq=9, pending_status="quarantined", pending_hash=None)
    assert not old.in_flight
    assert decide_upsert(old, source_seq=12, content_hash=H1, meta_hash=M1) is Decision.UNCHANGED


def test_fetched_event_is_deterministic_and_carries_the_bytes() -> None:
    ev = upsert(seq=3)
    data = b"version one"
    kw = {"meta": META, "data": data, "content_hash": H1, "meta_digest": M1}
    a = fetched_event(ev, change=Decision.METADATA, **kw)  # type: ignore[arg-type]
    b = fetched_event(
        ev.model_copy(update={"event_id": "another-caller-id"}),
        change=Decision.METADATA,
        **kw,  # type: ignore[arg-type]
    )
    # the id is what the change is, never the caller's id (issue 12, defect 1)
    assert (
        a.event_id
        == b.event_id
        == change_identity("acme", "wiki:a", "source.upsert", 3, f"{H1}:{M1}")
    )
    other = fetched_event(
        ev.model_copy(update={"document_id": "wiki:b"}),
        change=Decision.METADATA,
        **kw,  # type: ignore[arg-type]
    )
    assert other.event_id != a.event_id
    assert a.change == "metadata" and a.source_seq == 3 and a.size_bytes == len(data)
    assert base64.b64decode(a.content_b64) == data
    assert (a.tenant_id, a.document_id, a.content_hash) == ("acme", "wiki:a", H1)
    with pytest.raises(ValueError):
        fetched_event(ev, change=Decision.STALE, **kw)  # type: ignore[arg-type]


def test_control_events() -> None:
    d = control_event(SourceDelete(tenant_id="acme", document_id="wiki:a", source_seq=5))
    assert d.action == "delete" and d.acl is None and d.source_seq == 5
    a = control_event(
        SourceAclChange(
            tenant_id="acme",
            document_id="wiki:a",
            source_seq=6,
            acl_groups=("b", "a"),
            classification="restricted",
        )
    )
    assert a.action == "acl" and a.acl is not None
    assert a.acl.acl_groups == ("a", "b") and a.acl.classification == "restricted"


def test_seq_rule_ceiling_and_jump() -> None:
    rule = SeqRule(max_source_seq=2**62, max_seq_jump=1000)
    assert seq_implausible(None, 2**62, rule) is None
    assert "ceiling" in (seq_implausible(None, 2**62 + 1, rule) or "")
    assert seq_implausible(indexed(seq=10), 1010, rule) is None
    assert "1001" in (seq_implausible(indexed(seq=10), 1011, rule) or "")
    assert seq_implausible(indexed(seq=10), 5, rule) is None  # older: the order rule's job
    # an ACL change parked before any content states no seq: a timestamp source's first
    # upsert is not a "jump" from 0
    parked = StoredState(pending_seq=0, pending_status="awaiting_content")
    assert seq_implausible(parked, 1_700_000_000_000_000_000, rule) is None
    assert (
        seq_implausible(indexed(seq=10), 10**9, SeqRule(max_source_seq=2**62, max_seq_jump=0))
        is None
    )


def test_equal_seq_rules_at_intake() -> None:
    delete = SourceDelete(tenant_id="acme", document_id="wiki:a", source_seq=10)
    acl = SourceAclChange(tenant_id="acme", document_id="wiki:a", source_seq=10, acl_groups=("x",))
    # a delete or an ACL change at the current revision goes on (issue 12, defect 3)
    assert decide_control(indexed(seq=10), delete) is Decision.FORWARD
    assert decide_control(indexed(seq=10), acl) is Decision.FORWARD
    # an upsert at the seq of a delete loses, before any fetch
    tomb = StoredState(source_seq=10, status="deleted")
    assert decide_before_fetch(tomb, upsert(seq=10), M1) is Decision.STALE
    assert decide_upsert(tomb, source_seq=10, content_hash=H1, meta_hash=M1) is Decision.STALE


def test_narrowing_is_any_group_removed_or_a_stricter_classification() -> None:
    now = indexed(acl_groups=("eng", "sales"), classification="internal")
    meta = DocumentMeta(acl_groups=("eng",))
    assert narrows(now, meta)
    assert not narrows(now, DocumentMeta(acl_groups=("eng", "sales", "ops")))  # widening
    assert narrows(now, DocumentMeta(acl_groups=("eng", "sales"), classification="restricted"))
    assert not narrows(now, DocumentMeta(acl_groups=("eng", "sales"), classification="public"))
    assert not narrows(None, meta)  # nothing indexed: nothing to take away
    assert not narrows(StoredState(source_seq=1, status="deleted", acl_groups=("x",)), meta)


def test_a_change_of_an_older_reset_generation_is_stale() -> None:
    assert epoch_stale(0, 1) and epoch_stale(4, 2**63 - 1)
    assert not epoch_stale(1, 1) and not epoch_stale(2, 1) and not epoch_stale(0, 0)


def _acl_change(seq: int, groups: tuple[str, ...]) -> SourceAclChange:
    return SourceAclChange(
        tenant_id="acme", document_id="wiki:a", source_seq=seq, acl_groups=groups
    )


@pytest.mark.parametrize("change", [("eng", "ops"), ()])  # grant ops / revoke eng
def test_an_upsert_restating_the_acl_an_accepted_acl_change_replaces_is_not_unchanged(
    change: tuple[str, ...],
) -> None:
    """lifetest ACL-1: seq 10 indexed (eng); the ACL change at 11 is accepted, still in
    flight (the documents row still says eng); seq 12 states the same bytes, metadata
    and ACL as seq 10: it restates eng over the change, so it is never 'unchanged'
    (compared with what was last accepted, not only with what was last indexed)."""
    st_ = indexed().with_statement(acl_statement(_acl_change(11, change)))
    assert decide_upsert(st_, source_seq=12, content_hash=H1, meta_hash=M1, meta=META) is (
        Decision.METADATA
    )
    assert decide_before_fetch(st_, upsert(12, content_hash=H1), M1) is None  # fetched
    # older than the ACL change: its ACL loses anyway, nothing to restate
    assert decide_upsert(st_, source_seq=11, content_hash=H1, meta_hash=M1, meta=META) is (
        Decision.UNCHANGED
    )
    # the same ACL as the accepted change (which keeps the classification): unchanged
    same = indexed().with_statement(acl_statement(_acl_change(11, ("eng",)), kept="internal"))
    assert decide_upsert(same, source_seq=12, content_hash=H1, meta_hash=M1, meta=META) is (
        Decision.UNCHANGED
    )
    unknown = indexed().with_statement(acl_statement(_acl_change(11, ("eng",))))
    assert decide_upsert(unknown, source_seq=12, content_hash=H1, meta_hash=M1, meta=META) is (
        Decision.METADATA  # no classification known: compared as another statement
    )
    own = indexed().with_statement(acl_statement(upsert(10)))
    assert decide_upsert(own, source_seq=12, content_hash=H1, meta_hash=M1, meta=META) is (
        Decision.UNCHANGED
    )


def test_an_upsert_narrowing_an_accepted_acl_change_takes_the_fast_path() -> None:
    """lifetest ACL-1: the revocation by the restating upsert does not wait for the
    content when the ACL change it replaces is still in flight (readers will have it)."""
    now = indexed(acl_groups=("eng",), classification="internal")
    grant = now.with_statement(acl_statement(_acl_change(11, ("eng", "ops"))))
    assert narrows(grant, META, acl_statement(upsert(12)))
    applied = dataclasses.replace(grant, acl_groups=("eng", "ops"), acl_seq=11)
    assert narrows(applied, META)  # applied: the documents row says so, as before
    assert not narrows(now, META, acl_statement(upsert(12)))
    own = now.with_statement(acl_statement(upsert(10)))  # the indexed version's own
    assert not narrows(own, META, acl_statement(upsert(12)))


def test_accepted_statements_keep_the_newest_key() -> None:
    a = acl_statement(_acl_change(11, ("ops",)))
    b = acl_statement(upsert(12))
    assert (a.rank, b.rank) == (1, 0)
    assert indexed().with_statement(b).with_statement(a).stated_acl == b
    assert indexed().with_statement(a).with_statement(b).stated_acl == b
    same_seq = acl_statement(_acl_change(12, ("ops",)))
    assert indexed().with_statement(b).with_statement(same_seq).stated_acl == same_seq


# ---------------------------------------------------------------- the log of accepted changes
def test_the_log_of_accepted_changes_finds_a_change_by_its_identity() -> None:
    from ragline.connector.intake import Accepted

    st_ = StoredState(
        accepted=(Accepted("delete", 6, "d6"), Accepted("metadata", 4, "u4", "h4")),
    )
    assert st_.accepted_again("d6") == Accepted("delete", 6, "d6")
    assert st_.accepted_again("nope") is None
    assert st_.upsert_accepted_at(4) and not st_.upsert_accepted_at(6)
    assert Accepted("metadata", 4, "u4", "h4").entry(3) == ["metadata", 4, "u4", 3, "h4"]


_ENTRY = st.one_of(
    st.none(),
    st.integers(),
    st.text(),
    st.lists(
        st.one_of(st.none(), st.integers(-(2**63), 2**63), st.text(), st.booleans()),
        max_size=6,
    ),
)


@settings(deadline=None)
@given(
    log=st.one_of(
        st.none(),
        st.text(),
        st.dictionaries(st.text(), st.integers()),
        st.lists(_ENTRY, max_size=8),
    ),
    epoch=st.integers(0, 3),
)
def test_a_hostile_log_never_breaks_reading_the_state(log: object, epoch: int) -> None:
    """The status row's log is read by intake; whatever shape it has, reading it never
    fails, and only well-formed entries of the row's generation are kept."""
    from ragline.connector.state import _accepted

    out = _accepted(log, epoch)
    for a in out:
        assert isinstance(a.seq, int) and isinstance(a.identity, str)
    good = [["acl", 2**63, "i\x00\ud800", epoch, ""], ["delete", 1, "x", epoch + 1, ""]]
    assert [a.seq for a in _accepted(good, epoch)] == [2**63]
