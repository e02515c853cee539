"""Minimal lifecycle scenarios, one per kind of step the state machine can switch off
(``lifecycle_machine.FEATURES``: each exercises one of issue 12's defects), run through
the same pipeline, model and checks. They were found or confirmed by the machine
(/work/notes/lifetest-findings.md) and fail on the code before issue 12's fixes.

A scenario whose fix is not on main is a strict xfail naming the defect; when the fix
lands it passes, the strict xfail fails, and the feature moves to ``FIXED`` (which also
turns it on in the state machine). Today every feature is in ``FIXED``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lifecycle_machine import FEATURES, FIXED, Chooser, LifecycleMachine, fifo
from lifecycle_model import VersionKind
from lifecycle_world import World

from ragline.events import BULK, INTERACTIVE, Topics, lane_topic

pytestmark = pytest.mark.integration

A, B = "lt:alpha", "lt:gamma"
G1, G12 = ("g1",), ("g1", "g2")


def known(feature: str) -> Callable[[Any], Any]:
    """A strict xfail until ``feature``'s fix is on main (``FIXED``)."""
    if feature in FIXED:
        return lambda f: f
    return pytest.mark.xfail(strict=True, reason=f"issue 12 {FEATURES[feature]}")


def machine(world: World, feature: str) -> LifecycleMachine:
    LifecycleMachine.world = world
    LifecycleMachine.features = FIXED | {feature}
    return LifecycleMachine()


@known("reused_event_ids")
def test_reused_event_ids_across_documents_and_tenants(lifecycle_world: World) -> None:
    m = machine(lifecycle_world, "reused_event_ids")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # event id 0
    m.do_upsert(0, B, "next", "new", "ok", G12, "new", reuse=0)  # same id, other document
    m.do_upsert(1, A, "next", "new", "ok", G12, "new", reuse=0)  # same id, other tenant
    m.settle()
    m.do_acl(1, A, "next", G1, reuse=0)  # tenant B revokes g2 with an id tenant A used
    m.do_delete(1, B, "next", reuse=0)
    m.settle()


@known("quarantine_acl")
def test_quarantined_version_still_narrows_the_acl(lifecycle_world: World) -> None:
    m = machine(lifecycle_world, "quarantine_acl")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_upsert(0, A, "next", "new", "empty", G1, "keep")  # g2 revoked with an empty version
    m.do_upsert(0, B, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_upsert(0, B, "next", "new", "secret", G1, "keep")  # and with a blocked secret
    m.settle()


@known("equal_seq_control")
def test_acl_change_and_delete_at_the_current_seq(lifecycle_world: World) -> None:
    m = machine(lifecycle_world, "equal_seq_control")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")
    m.do_upsert(0, B, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_acl(0, A, "equal", G1)  # permissions change at the current revision
    m.do_delete(0, B, "equal")
    m.settle()


@known("equal_seq_upsert")
def test_two_upserts_with_one_seq_leave_the_stores_agreeing(lifecycle_world: World) -> None:
    m = machine(lifecycle_world, "equal_seq_upsert")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_upsert(0, A, "equal", "new", "ok", G12, "keep")  # other bytes, same seq
    m.settle()


@known("redelivered_control")
def test_redelivered_delete_keeps_its_terminal_status(lifecycle_world: World) -> None:
    m = machine(lifecycle_world, "redelivered_control")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_delete(0, A, "next")
    m.do_delete(0, B, "next")  # never seen
    m.settle()
    m.do_redeliver(1)  # the same delete events again, as a broker redelivers them
    m.do_redeliver(2)
    m.settle()


@known("poison")
def test_poison_events_do_not_take_their_batch_neighbours(lifecycle_world: World) -> None:
    m = machine(lifecycle_world, "poison")
    for kind in ("nul_id", "huge_seq", "nul_title", "nul_metadata"):
        m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # good neighbours, one batch
        m.do_poison(0, kind)
        m.do_upsert(1, B, "next", "new", "ok", G12, "new")
        m.settle()


@known("deleted_gone")
def test_deleted_document_is_gone_for_every_reader(lifecycle_world: World) -> None:
    m = machine(lifecycle_world, "deleted_gone")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_delete(0, A, "next")
    m.settle()


def one_at_a_time(pending: list[str]) -> tuple[str, int, bool]:
    """Pipeline order, one record per batch: a later source change reaches the
    connector before the indexer has recorded an earlier version's quarantine."""
    return fifo(pending)[0], 1, False


# the stage that quarantines each kind: connector, parser, scanner, chunker (injected)
QUARANTINING: tuple[VersionKind, ...] = ("oversize", "empty", "secret", "chunkfail")


@known("older_after_quarantine")
@pytest.mark.parametrize("kind", QUARANTINING)
def test_older_upsert_after_a_quarantined_first_version_is_stale(
    lifecycle_world: World, kind: VersionKind
) -> None:
    m = machine(lifecycle_world, "older_after_quarantine")
    m.do_upsert(0, A, "next", "new", kind, G1, "new")  # seq 1, quarantined
    m.do_upsert(0, A, "next", "keep", kind, ("g2",), "new")  # seq 2
    m.do_upsert(0, A, "older", "new", "ok", G1, "keep")  # seq 0: older than both, one batch
    m.settle()
    m.do_upsert(1, B, "next", "new", kind, G12, "new")  # seq 1, quarantined
    m.do_upsert(1, B, "older", "new", "ok", G1, "new")  # seq 0, in the next batch
    m.settle(one_at_a_time)
    m.do_upsert(1, B, "next", "new", "ok", G1, "new")  # a valid newer version is indexed
    m.settle(one_at_a_time)


@known("older_after_quarantine")
@pytest.mark.parametrize("kind", QUARANTINING)
def test_older_upsert_after_a_quarantined_newer_version_of_an_indexed_one_is_stale(
    lifecycle_world: World, kind: VersionKind
) -> None:
    m = machine(lifecycle_world, "older_after_quarantine")
    m.do_upsert(0, A, "gap", "new", "ok", G12, "new")  # seq 5, indexed
    m.settle()
    m.do_upsert(0, A, "gap", "new", kind, G1, "new")  # seq 10, quarantined: g2 loses v5
    m.do_upsert(0, A, "older", "new", "ok", G12, "new")  # seq 8: stale, g2 gets nothing
    m.settle(one_at_a_time)


@known("good_after_quarantine")
@pytest.mark.parametrize("kind", QUARANTINING)
def test_the_last_good_bytes_after_a_quarantined_version_are_indexed_again(
    lifecycle_world: World, kind: VersionKind
) -> None:
    m = machine(lifecycle_world, "good_after_quarantine")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1, indexed
    m.settle()
    m.do_upsert(0, A, "next", "new", kind, G1, "keep")  # seq 2, quarantined: g2 loses seq 1
    m.settle()
    # seq 3: seq 1's bytes, title and ACL again; the source is fine again, g2 reads it
    m.do_upsert(0, A, "next", "good", "ok", G12, "keep")
    m.settle()


def late(*topics: Topics) -> Chooser:
    """Pipeline order, except that ``topics`` (either lane) are delivered last."""
    held = {lt for t in topics for lt in (t.value, lane_topic(t.value, BULK))}

    def choose(pending: list[str]) -> tuple[str, int, bool]:
        return fifo([t for t in pending if t not in held] or pending)

    return choose


@known("quarantine_acl")
@pytest.mark.parametrize("kind", ("empty", "secret", "chunkfail"))
def test_a_quarantine_overtaking_an_older_version_still_narrows_it(
    lifecycle_world: World, kind: VersionKind
) -> None:
    """lifetest F11: seq 2 revokes g2 and is quarantined (parser, scanner, chunker)
    before seq 1, stated first, reaches the indexer: seq 1 is indexed for g1 only."""
    m = machine(lifecycle_world, "quarantine_acl")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")
    m.do_upsert(0, A, "next", "new", kind, G1, "keep")
    m.settle(late(Topics.DOC_EMBEDDED))


@known("quarantine_acl")
@pytest.mark.parametrize("kind", ("oversize", "secret"))
def test_two_quarantined_versions_narrow_in_any_order(
    lifecycle_world: World, kind: VersionKind
) -> None:
    """lifetest F12: seq 2 (g1) and seq 3 (g2) both quarantined in one batch leave the
    indexed seq 1 (g1, g2) to nobody, whichever narrowing reaches the indexer first."""
    m = machine(lifecycle_world, "quarantine_acl")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")
    m.do_upsert(1, A, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_upsert(0, A, "next", "new", kind, G1, "keep")
    m.do_upsert(0, A, "next", "new", "oversize", ("g2",), "keep")
    m.settle()
    m.do_upsert(1, A, "next", "new", "secret", G1, "keep")  # narrowing + scanner quarantine
    m.do_upsert(1, A, "next", "new", "oversize", ("g2",), "keep")  # connector quarantine
    m.settle(late(Topics.DOC_CONTROL))


@known("reset_seq")
def test_redelivered_changes_after_a_reset_seq(lifecycle_world: World) -> None:
    m = machine(lifecycle_world, "reset_seq")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1
    m.do_upsert(0, A, "gap", "new", "ok", G1, "new")  # seq 6
    m.do_delete(0, B, "next")  # never seen: a tombstone at seq 1
    m.do_acl(1, A, "gap", G1)  # tenant B, same id: parked at seq 5
    m.settle()
    m.do_reset_seq(0, A, 3)  # seq 6 -> 3
    m.do_redeliver(1)  # the seq-6 upsert again: applies like a new change
    m.do_redeliver(0)  # the seq-1 upsert: still stale
    m.do_upsert(0, A, "older", "new", "secret", ("g2",), "keep")  # seq 4 quarantined
    m.settle()
    m.do_reset_seq(1, A, 5)
    m.do_upsert(1, A, "older", "new", "ok", G12, "new")
    m.do_redeliver(3)  # tenant B's ACL change again
    m.settle()


@known("unchanged_restatement")
def test_an_unchanged_restatement_holds_its_seq_and_restates_its_acl(
    lifecycle_world: World,
) -> None:
    m = machine(lifecycle_world, "unchanged_restatement")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1
    m.do_upsert(1, A, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_upsert(0, A, "gap", "keep", "ok", G12, "keep")  # seq 6: the same bytes and meta
    m.settle()
    m.do_upsert(0, A, "older", "new", "ok", G12, "new")  # seq 4: older than 6, stale
    m.do_delete(0, A, "older")  # seq 4 too
    m.do_acl(1, A, "next", G1)  # tenant B: g2 revoked at seq 2
    m.settle()
    m.do_upsert(1, A, "gap", "keep", "ok", G12, "keep")  # seq 7: the same version, g2 again
    m.settle()


@known("replay_after_reset")
def test_a_downstream_replay_after_a_reset_seq_keeps_a_revocation(
    lifecycle_world: World,
) -> None:
    """lifetest F14: reset-seq lowers the seqs and drops the ledger entries above the new
    value, so a replay of doc.fetched afterwards re-indexed seq 1 with its own ACL (g2)
    over the ACL change at seq 2 (g1) that revoked g2. The reset starts the document's
    next generation (seq_epoch): the replayed events are of the old one, refused as
    stale; the source's changes accepted after the reset are applied."""
    m = machine(lifecycle_world, "replay_after_reset")
    m.do_upsert(1, B, "next", "new", "ok", ("g2",), "new")  # seq 1
    m.do_acl(1, B, "next", G1)  # seq 2: g2 revoked
    m.settle()
    m.do_reset_seq(1, B, 2)  # --to 0
    m.do_replay(Topics.DOC_FETCHED.value)  # generation 0: refused, g2 reads nothing
    m.do_replay(Topics.DOC_CONTROL.value)
    m.settle()
    # re-fed from the source (what the docs say to do): accepted in generation 1
    m.do_replay(Topics.SOURCE_CHANGES.value)
    m.settle()
    m.do_replay(Topics.DOC_EMBEDDED.value)  # generations 0 and 1: nothing changes
    m.settle()


def intake_bulk_first(pending: list[str]) -> tuple[str, int, bool]:
    """Pipeline order, except that the connector takes the bulk lane first."""
    bulk_intake = lane_topic(Topics.SOURCE_CHANGES.value, BULK)
    return (bulk_intake, 64, False) if bulk_intake in pending else fifo(pending)


REVERT_LANES = {
    "one_lane": ((INTERACTIVE, INTERACTIVE), fifo),
    # the ACL change in bulk, the upsert interactive: the connector sees the upsert
    # first (the ACL change is then stale) or the ACL change first (in flight)
    "upsert_first": ((BULK, INTERACTIVE), fifo),
    "acl_first": ((BULK, INTERACTIVE), intake_bulk_first),
}


@known("acl_revert_in_flight")
@pytest.mark.parametrize("lanes", sorted(REVERT_LANES))
@pytest.mark.parametrize("what", ["grant_then_revert", "revoke_then_revert"])
def test_an_upsert_restating_the_acl_of_an_acl_change_in_flight_is_applied(
    lifecycle_world: World, what: str, lanes: str
) -> None:
    """lifetest ACL-1: seq 1 indexed; the ACL change at seq 2 is accepted and on its way
    to the indexer; seq 3 states seq 1's bytes, title and ACL again. The connector
    compared it with what was indexed (seq 1: the same) and dropped it as unchanged, so
    the ACL change won: a group it granted kept reading (grant_then_revert: g2 reads a
    document the source restricted to g1 again), or a group it revoked never came back."""
    m = machine(lifecycle_world, "acl_revert_in_flight")
    first, change = (G1, G12) if what == "grant_then_revert" else (G12, G1)
    lane_pair, choose = REVERT_LANES[lanes]
    m.lane = INTERACTIVE
    m.do_upsert(0, A, "next", "new", "ok", first, "new")  # seq 1
    m.settle()
    m.do_revert(0, A, change, lane_pair)  # ACL change seq 2, then seq 1 again at seq 3
    m.settle(choose)


@known("reset_in_flight")
def test_a_reset_while_accepted_changes_are_in_flight_leaves_no_accepted_status(
    lifecycle_world: World,
) -> None:
    """lifetest ACL-2: the connector accepted a new version, a delete and an ACL change
    (stamped with generation 0), then an operator reset the documents' seqs (generation
    1) before the indexer saw them: the indexer refuses them as of the old generation,
    and the status stayed 'accepted' for ever. The reset now marks the refused change
    failed (reason_code reset_seq); the source's next change is applied."""
    m = machine(lifecycle_world, "reset_in_flight")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1
    m.do_upsert(0, B, "next", "new", "ok", G12, "new")
    m.settle()
    m.do_upsert(0, A, "next", "new", "ok", G1, "new")  # seq 2: accepted, then refused
    m.do_delete(0, B, "next")  # seq 2: accepted, then refused
    m.do_acl(1, A, "next", G1)  # tenant B, never seen: parked as usual
    m.do_reset_in_flight(0, A, 0)
    m.do_reset_in_flight(0, B, 0)
    m.settle()
    for d, refused in ((A, "content"), (B, "delete")):
        row = lifecycle_world.run(status_row(lifecycle_world, m.tenants[0], d))
        assert row == ("failed", "reset_seq", "reset-seq"), (d, refused, row)
    # the source's next change (or a re-send by `ragline sync`) applies again
    m.do_upsert(0, A, "next", "new", "ok", G1, "new")
    m.do_delete(0, B, "next")
    m.settle()


async def status_row(world: World, tenant: str, document_id: str) -> tuple[str, str, str] | None:
    assert world.admin is not None
    cur = await world.admin.execute(
        "SELECT status, reason_code, stage FROM document_status"
        " WHERE tenant_id = %s AND document_id = %s",
        (tenant, document_id),
    )
    row = await cur.fetchone()
    return None if row is None else (row[0], row[1], row[2])


@known("quarantine_acl")
@pytest.mark.parametrize(
    "kinds", [("secret", "oversize"), ("empty", "chunkfail"), ("oversize", "secret")]
)
def test_every_newer_quarantined_version_narrows_an_older_one_indexed_after_them(
    lifecycle_world: World, kinds: tuple[VersionKind, VersionKind]
) -> None:
    """lifetest ACL-3 (the ADR 0007 residual): seq 1 (g1, g2) is on its way to the
    indexer while seq 2 (g1) and seq 3 (g2) are quarantined and reach the indexer first.
    Only the newest quarantine's ACL narrowed seq 1 (the status row keeps one statement):
    g2 read it. Every newer quarantined version narrows it: nobody reads it."""
    m = machine(lifecycle_world, "quarantine_acl")
    m.do_upsert(1, A, "gap", "new", "ok", G12, "new")  # seq 5, indexed first
    m.settle()
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1
    m.do_upsert(0, A, "next", "new", kinds[0], G1, "keep")  # seq 2
    m.do_upsert(0, A, "next", "new", kinds[1], ("g2",), "keep")  # seq 3
    # tenant B: the same with an indexed version before them
    m.do_upsert(1, A, "next", "new", "ok", G1, "new")  # seq 6, in flight
    m.do_upsert(1, A, "next", "new", kinds[0], G12, "keep")  # seq 7
    m.do_upsert(1, A, "next", "new", kinds[1], ("g2",), "keep")  # seq 8
    m.settle(late(Topics.DOC_EMBEDDED))


@known("good_after_quarantine")
@pytest.mark.parametrize("kind", ["oversize", "secret"])
def test_an_acl_only_restore_after_a_quarantine_is_applied(
    lifecycle_world: World, kind: VersionKind
) -> None:
    """After a quarantine narrowed the indexed version (g2 lost it), the source restores
    the ACL alone: as an ACL change (applied: a full statement newer than the narrowing),
    then as an upsert of the indexed bytes with that ACL (a change while the status holds
    the quarantine, F10), and with the quarantined bytes again (still quarantined, still
    narrowed). Checked for lifetest ACL-1: nothing here is dropped as unchanged."""
    m = machine(lifecycle_world, "good_after_quarantine")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1
    m.settle()
    m.do_upsert(0, A, "next", "new", kind, G1, "keep")  # seq 2: g2 loses seq 1
    m.settle()
    m.do_acl(0, A, "next", G12)  # seq 3: g2 back
    m.settle()
    m.do_upsert(0, A, "next", "good", "ok", G12, "keep")  # seq 4: seq 1's bytes again
    m.settle()
    m.do_upsert(0, A, "next", "new", kind, G12, "keep")  # seq 5: quarantined, same ACL
    m.do_acl(0, A, "next", G1)  # seq 6: an ACL change after it, then seq 4 again
    m.do_upsert(0, A, "next", "good", "ok", G12, "keep")  # seq 7
    m.settle()


def crash_first_intake() -> Chooser:
    """Pipeline order; the connector's first batch (64 records) crashes after its effect
    (the status write) and before its offset commit, and is delivered again."""
    crashed = False

    def choose(pending: list[str]) -> tuple[str, int, bool]:
        nonlocal crashed
        topic, n, _ = fifo(pending)
        crash = topic == Topics.SOURCE_CHANGES.value and not crashed
        crashed = crashed or crash
        return topic, n, crash

    return choose


@known("crash_redelivery")
@pytest.mark.parametrize("newest", ["oversize", "secret"])
def test_a_crashed_batch_redelivered_loses_no_delete_or_revocation(
    lifecycle_world: World, newest: VersionKind
) -> None:
    """seq 1 indexed for g1 and g2; one connector batch then carries, per document, an
    older change and a newer version that is quarantined (by the connector: oversize; or
    a later stage: a blocked secret). The batch crashes after its status write and is
    redelivered: the status row holds the quarantined version, so the older change was
    stale the second time and never reached the indexer. A deleted document (A), a group
    revoked by an ACL change (B), by a version indexed (tenant 2, A) or quarantined itself
    (tenant 2, B) read seq 1 again through the groups it shares with the newest version.
    Each older change is in the status row's log of accepted changes and passed on again."""
    m = machine(lifecycle_world, "crash_redelivery")
    for t in (0, 1):
        for d in (A, B):
            m.do_upsert(t, d, "next", "new", "ok", G12, "new")  # seq 1
    m.settle()
    m.do_delete(0, A, "next")  # seq 2: deleted
    m.do_upsert(0, A, "next", "new", newest, G1, "new")  # seq 3 (g1 shares seq 1's ACL)
    m.do_acl(0, B, "next", ("g2",))  # seq 2: g1 revoked
    m.do_upsert(0, B, "next", "new", newest, G12, "new")  # seq 3: g1, g2
    m.do_upsert(1, A, "next", "new", "ok", ("g2",), "new")  # seq 2: g1 revoked, indexed
    m.do_upsert(1, A, "next", "new", newest, G12, "keep")  # seq 3
    m.do_upsert(1, B, "next", "new", "secret", ("g2",), "new")  # seq 2: g1 revoked, quarantined
    m.do_upsert(1, B, "next", "new", newest, G12, "keep")  # seq 3
    m.settle(crash_first_intake())
    # the next change decides again, as usual
    m.do_upsert(0, B, "next", "new", "ok", G1, "new")
    m.settle()


@known("quarantine_acl")
@pytest.mark.parametrize("kind", ["oversize", "secret"])
def test_an_acl_change_overtaken_by_a_newer_versions_quarantine_still_revokes(
    lifecycle_world: World, kind: VersionKind
) -> None:
    """seq 1 indexed for g1 and g2; the ACL change at seq 2 revokes g1; seq 3 (g1 only) is
    quarantined and its quarantine reaches the indexer first: seq 1 narrowed to g1 with
    ACL key (3, 0), and the ACL change (2, 1) was then dropped as older: g1, revoked,
    read seq 1 (found while checking ADR 0008 amendment (3); no crash needed). The change
    now still narrows what stays indexed (an intersection): nobody reads seq 1."""
    m = machine(lifecycle_world, "quarantine_acl")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1
    m.settle()
    m.do_acl(0, A, "next", ("g2",))  # seq 2: g1 revoked
    m.do_upsert(0, A, "next", "new", kind, G1, "keep")  # seq 3: g1 only, quarantined
    m.settle(late(Topics.DOC_CONTROL))


@known("reset_in_flight")
def test_an_acl_change_refused_by_a_reset_has_a_visible_status(lifecycle_world: World) -> None:
    """An ACL change accepted before a reset-seq is refused downstream like a content
    change; it has no status of its own, and the row kept saying 'indexed' (the old ACL
    stayed, silently). The reset now marks the row 'failed' with reason code reset_seq
    and a reason naming the ACL change; the source's re-send clears it."""
    m = machine(lifecycle_world, "reset_in_flight")
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1
    m.settle()
    m.do_acl(0, A, "next", G1)  # seq 2: accepted, then refused
    m.do_reset_in_flight(0, A, 0)
    m.settle()
    world = lifecycle_world
    assert world.run(status_row(world, m.tenants[0], A)) == ("failed", "reset_seq", "reset-seq")
    m.do_upsert(0, A, "next", "keep", "ok", G1, "keep")  # `ragline sync`: seq 1 with its ACL
    m.settle()
    assert world.run(status_row(world, m.tenants[0], A)) == ("indexed", None, "indexer")
