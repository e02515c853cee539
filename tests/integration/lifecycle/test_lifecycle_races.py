"""Races inside one connector batch, on the real stack: what another batch (the other
priority lane's consumer, ADR 0012) or an operator's ``reset-seq`` commits between a
batch's read of the stored state and its status write. The interleaving is forced by
running the other party right after the batch's read (a hook on the real ``StateStore``;
Postgres, the pipeline and the checks are the lifecycle tests' own), then the pipeline
settles and every store must equal the reference model (send order).

lifetest ACL-1 (an ACL change in flight and an upsert restating the previous ACL) and
ACL-2 (a change stamped with the generation a reset-seq just ended)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from lifecycle_machine import FIXED, LifecycleMachine
from lifecycle_world import World

from ragline.connector.stage import ConnectorStage
from ragline.events import BULK, INTERACTIVE, Topics, lane_topic
from ragline.ops.seq_reset import reset_seq

pytestmark = pytest.mark.integration

A = "lt:alpha"
G1, G12 = ("g1",), ("g1", "g2")
INTAKE = Topics.SOURCE_CHANGES.value
BULK_INTAKE = lane_topic(INTAKE, BULK)


def machine(world: World) -> LifecycleMachine:
    LifecycleMachine.world = world
    LifecycleMachine.features = FIXED
    return LifecycleMachine()


def after_read(world: World, meanwhile: Callable[[], Awaitable[Any]]) -> None:
    """Run ``meanwhile`` right after the connector's next batch read the stored state of
    its documents (before it decides and writes), once."""
    stage = world.driver.stages["connector"]
    assert isinstance(stage, ConnectorStage)
    store = stage.state
    original = store.get_many

    async def get_many(*args: Any, **kwargs: Any) -> Any:
        store.get_many = original  # type: ignore[method-assign]  # once: the other party reads plainly
        got = await original(*args, **kwargs)
        await meanwhile()
        return got

    store.get_many = get_many  # type: ignore[method-assign]


# which of the two is decided first: the ACL change (interactive) or the restatement
RACES = {
    # the upsert's batch (interactive) read the state, then the ACL change's batch (bulk)
    # accepted the change, then the upsert's batch dropped it as unchanged: the change
    # won. Now the restatement's write is refused and the upsert decided again
    "restatement_read_first": (BULK, INTERACTIVE),
    # the ACL change's batch (interactive) read the state, then the restatement's batch
    # (bulk, a newer seq) held its seq, then the ACL change went on and won. Now the ACL
    # change's write finds the newer statement: it is stale
    "acl_change_read_first": (INTERACTIVE, BULK),
}


@pytest.mark.parametrize("race", sorted(RACES))
@pytest.mark.parametrize("what", ["grant_then_revert", "revoke_then_revert"])
def test_a_restatement_and_an_acl_change_racing_in_the_two_lanes(
    lifecycle_world: World, what: str, race: str
) -> None:
    """lifetest ACL-1 across lanes: seq 1 indexed; an ACL change (seq 2) and seq 1 again
    (seq 3) decided concurrently by the two lanes' batches, each having read the state
    before the other wrote. Either order must end with seq 3's ACL."""
    m = machine(lifecycle_world)
    first, change = (G1, G12) if what == "grant_then_revert" else (G12, G1)
    m.do_upsert(0, A, "next", "new", "ok", first, "new")  # seq 1
    m.settle()
    m.do_revert(0, A, change, RACES[race])
    driver = lifecycle_world.driver
    after_read(lifecycle_world, lambda: driver.deliver(BULK_INTAKE, 64))
    lifecycle_world.run(driver.deliver(INTAKE, 64))
    m.settle()


@pytest.mark.parametrize("kind", ["upsert", "delete", "acl"])
def test_a_change_stamped_just_before_a_reset_is_decided_again(
    lifecycle_world: World, kind: str
) -> None:
    """The batch read generation 0, then ``reset-seq`` committed generation 1, then the
    batch wrote 'accepted' and published its change stamped 0: the indexer refused it
    and the status stayed 'accepted' (a new version never came, a delete or revocation
    never happened). Now the write finds the newer generation: nothing is written, the
    change is retried, stamped 1, and applies."""
    m = machine(lifecycle_world)
    m.do_upsert(0, A, "next", "new", "ok", G12, "new")  # seq 1
    m.do_upsert(0, A, "gap", "new", "ok", G12, "new")  # seq 6: the reset lowers it to 2
    m.settle()
    if kind == "upsert":
        m.do_upsert(0, A, "next", "new", "ok", G1, "new")  # seq 7
    elif kind == "delete":
        m.do_delete(0, A, "next")
    else:
        m.do_acl(0, A, "next", G1)
    key = (m.tenants[0], A)
    world = lifecycle_world
    assert world.admin is not None
    admin = world.admin

    async def reset() -> None:
        await reset_seq(admin, tenant_id=key[0], document_id=A, to=2, actor="lt", reason="lt")
        m.model[key].reset_seq(2)  # the change was sent before: the model applied it

    after_read(world, reset)
    world.run(world.driver.deliver(INTAKE, 64))
    m.settle()
