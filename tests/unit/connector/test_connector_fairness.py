"""Tenant fairness (connector/fairness.py, docs/lanes.md "Tenant fairness"): the
per-tenant interactive budget never drops a change, never demotes (or charges) an ACL
change or a delete, never promotes bulk work, is monotone in time, and keeps tenants
apart whatever their ids look like."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_connector_stage import CTX, MemoryState
from test_connector_sync import FakeSource, item
from test_connector_sync import Sink as SyncSink
from test_connector_sync import st as sync_st
from test_connector_webhook import BEARER, Sink, body, make_client

from ragline.config import Settings
from ragline.connector.fairness import (
    HEAVY,
    TENANT_BUDGET,
    BulkPacer,
    InteractiveAdmission,
    TenantBudget,
    demotable,
)
from ragline.connector.intake import StoredState
from ragline.connector.metrics import LANE_DEMOTIONS
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage
from ragline.connector.sync import build_plan, execute
from ragline.events import (
    BULK,
    INTERACTIVE,
    DocControl,
    DocumentMeta,
    EventBase,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
)
from ragline.runtime.lanes import with_lane

# ids that look alike but are not the same bytes, and ids no contract would accept
HOSTILE_TENANTS = [
    "acme",
    "acme\u200b",  # zero-width space
    "\u200bacme",
    "acme\x00",  # NUL
    "acme\x00evil",
    "ACME",
    "аcme",  # Cyrillic a
    "acme\ufeff",
    "",
    "a" * 100_000,  # very long
    "a" * 99_999 + "b",
    "\ud800",  # lone surrogate
]

tenants = st.sampled_from(HOSTILE_TENANTS) | st.text(max_size=40)
# the contract refuses the hostile ids above (events.py, tenant_id pattern); events
# carry valid ones, some of them alike
event_tenants = st.sampled_from(["acme", "acme-", "acme_", "acme0", "0acme"]) | st.from_regex(
    r"\A[a-z0-9][a-z0-9_-]{0,62}\Z"
)
gaps = st.floats(min_value=0, max_value=50, allow_nan=False)
rates = st.floats(min_value=0.01, max_value=100, allow_nan=False)
bursts = st.integers(min_value=1, max_value=30)


def times(gs: list[float]) -> list[float]:
    out, t = [], 0.0
    for g in gs:
        t += g
        out.append(t)
    return out


Change = SourceUpsert | SourceDelete | SourceAclChange


def upsert(tenant: str = "acme", doc: str = "wiki:a", seq: int = 1) -> SourceUpsert:
    return SourceUpsert(
        tenant_id=tenant,
        document_id=doc,
        source_seq=seq,
        meta=DocumentMeta(acl_groups=("eng",)),
        content_text="x",
    )


def changes(tenant: str = "acme") -> list[EventBase]:
    """One of each kind, interactive and bulk."""
    base: list[EventBase] = [
        upsert(tenant),
        SourceDelete(tenant_id=tenant, document_id="wiki:a", source_seq=2),
        SourceAclChange(tenant_id=tenant, document_id="wiki:a", source_seq=3, acl_groups=("g",)),
        DocControl(tenant_id=tenant, document_id="wiki:a", source_seq=4, action="delete"),
    ]
    return base + [with_lane(e, BULK) for e in base]


class Clock:
    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


# -- the bucket ---------------------------------------------------------------------------


@given(rate=rates, burst=bursts, gs=st.lists(gaps, max_size=60))
@settings(deadline=None)  # no timing: a loaded machine is slow
def test_never_more_than_burst_plus_rate_times_elapsed(
    rate: float, burst: int, gs: list[float]
) -> None:
    budget = TenantBudget(rate, burst)
    ts = times(gs)
    admitted = sum(budget.charge("t", t)[0] for t in ts)
    elapsed = ts[-1] - ts[0] if ts else 0.0
    assert admitted <= burst + rate * elapsed + 1e-6
    # and the first `burst` are always admitted (a full bucket to start with)
    fresh = TenantBudget(rate, burst)
    assert all(fresh.charge("t", 0.0)[0] for _ in range(burst))


@given(rate=rates, burst=bursts, n=st.integers(1, 80))
@settings(deadline=None)  # no timing: a loaded machine is slow
def test_a_tenant_within_its_rate_is_never_demoted(rate: float, burst: int, n: int) -> None:
    budget = TenantBudget(rate, burst)
    assert all(budget.charge("t", i / rate)[0] for i in range(n))


@given(rate=rates, burst=bursts, gs=st.lists(gaps, max_size=40), stretch=st.floats(1, 10))
@settings(deadline=None)  # no timing: a loaded machine is slow
def test_monotone_in_time_more_time_never_admits_less(
    rate: float, burst: int, gs: list[float], stretch: float
) -> None:
    """The same changes with the gaps between them stretched: at least as many
    admitted in every prefix (waiting never costs budget)."""
    a, b = TenantBudget(rate, burst), TenantBudget(rate, burst)
    got_a = got_b = 0
    for ta, tb in zip(times(gs), times([g * stretch for g in gs]), strict=True):
        got_a += a.charge("t", ta)[0]
        got_b += b.charge("t", tb)[0]
        assert got_b >= got_a


@given(rate=rates, burst=bursts, gs=st.lists(gaps, min_size=1, max_size=30), dt=gaps)
@settings(deadline=None)  # no timing: a loaded machine is slow
def test_tokens_grow_with_time_and_a_clock_going_back_refunds_nothing(
    rate: float, burst: int, gs: list[float], dt: float
) -> None:
    budget = TenantBudget(rate, burst)
    ts = times(gs)
    for t in ts:
        budget.charge("t", t)
    now = ts[-1]
    assert budget.tokens("t", now) <= budget.tokens("t", now + dt) <= burst
    # a time before the last charge counts as the last charge's time: no refill
    before = budget.tokens("t", now)
    earlier = TenantBudget(rate, burst)
    for t in ts:
        earlier.charge("t", t)
    admitted_back = earlier.charge("t", now - 1000.0)[0]
    assert admitted_back == (before >= 1.0)
    assert earlier.tokens("t", now) == pytest.approx(max(0.0, before - admitted_back))


@given(
    rate=rates,
    burst=bursts,
    steps=st.lists(st.tuples(tenants, gaps), max_size=80),
)
@settings(max_examples=150, deadline=None)
def test_tenants_never_share_a_budget_whatever_their_ids(
    rate: float, burst: int, steps: list[tuple[str, float]]
) -> None:
    """Charging tenants interleaved gives each tenant exactly what charging it alone
    gives: a flood of one id (or of an id that only looks like it) never costs another."""
    together = TenantBudget(rate, burst)
    alone: dict[str, TenantBudget] = {}
    t = 0.0
    for tenant, gap in steps:
        t += gap
        own = alone.setdefault(tenant, TenantBudget(rate, burst))
        assert together.charge(tenant, t) == own.charge(tenant, t)


def test_look_alike_ids_are_different_tenants() -> None:
    budget = TenantBudget(1.0, 2)
    for _ in range(5):
        budget.charge("acme", 0.0)
    assert budget.charge("acme", 0.0) == (False, False)  # over (noted once already)
    for other in HOSTILE_TENANTS[1:]:
        assert budget.charge(other, 0.0) == (True, False), repr(other[:20])


def test_newly_over_is_reported_once_per_run_of_demotions() -> None:
    budget = TenantBudget(1.0, 1)
    assert budget.charge("t", 0.0) == (True, False)
    assert budget.charge("t", 0.0) == (False, True)
    assert budget.charge("t", 0.5) == (False, False)
    assert budget.charge("t", 1.0) == (True, False)  # refilled: admitted again
    assert budget.charge("t", 1.0) == (False, True)  # a new run


@given(
    rate=rates,
    burst=bursts,
    cap=st.integers(1, 8),
    steps=st.lists(st.tuples(st.integers(0, 20), gaps), max_size=80),
)
@settings(deadline=None)  # no timing: a loaded machine is slow
def test_memory_is_bounded_and_forgetting_only_ever_admits_more(
    rate: float, burst: int, cap: int, steps: list[tuple[int, float]]
) -> None:
    """At most ``max_tenants`` buckets; a forgotten bucket starts full again, so a
    bounded budget admits at least what an unbounded one does (never less: forgetting
    cannot demote anyone), and exactly the same while every forgotten bucket was full."""
    bounded = TenantBudget(rate, burst, max_tenants=cap)
    unbounded = TenantBudget(rate, burst, max_tenants=10**6)
    t = 0.0
    for who, gap in steps:
        t += gap
        tenant = f"t{who}"
        a, _ = bounded.charge(tenant, t)
        b, _ = unbounded.charge(tenant, t)
        assert a or not b
        assert len(bounded) <= cap


def test_full_buckets_are_forgotten_first() -> None:
    budget = TenantBudget(1.0, 2, max_tenants=2)
    budget.charge("idle", 0.0)
    budget.charge("flood", 100.0)
    budget.charge("flood", 100.0)
    budget.charge("flood", 100.0)  # demoted; "idle" is full again by now
    budget.charge("new", 100.0)  # makes room: "idle" goes, "flood" is kept (empty)
    assert budget.charge("flood", 100.0)[0] is False
    assert len(budget) == 2


@pytest.mark.parametrize("rate", [-1.0, math.inf, math.nan])
def test_a_bad_rate_is_refused(rate: float) -> None:
    with pytest.raises(ValueError):
        TenantBudget(rate, 1)


def test_rate_zero_is_off() -> None:
    budget = TenantBudget(0.0, 1)
    assert not budget.enabled
    assert all(budget.charge("t", 0.0) == (True, False) for _ in range(1000))
    assert len(budget) == 0


# -- what is charged and demoted ---------------------------------------------------------


@given(
    rate=rates,
    burst=bursts,
    kinds=st.lists(st.integers(0, 7), max_size=60),
    gs=st.lists(gaps, min_size=60, max_size=60),
    tenant=event_tenants,
)
@settings(max_examples=150, deadline=None)
def test_never_drops_never_promotes_never_touches_acl_or_deletes(
    rate: float, burst: int, kinds: list[int], gs: list[float], tenant: str
) -> None:
    clock = Clock()
    admission = InteractiveAdmission(TenantBudget(rate, burst), clock=clock)
    for kind, t in zip(kinds, times(gs), strict=False):
        clock.t = t
        event = changes(tenant)[kind]
        before = admission.budget.tokens(tenant, t)
        out = admission.place(event)
        # never dropped: the same change, at most its lane differs
        assert out.model_dump(exclude={"priority"}) == event.model_dump(exclude={"priority"})
        if event.priority == BULK:
            assert out.priority == BULK  # never promoted
        if not isinstance(event, SourceUpsert) or event.priority == BULK:
            assert out.priority == event.priority  # deletes, ACL changes, bulk: as they were
            assert admission.budget.tokens(tenant, t) == before  # and never charged
        else:
            assert out.priority == (INTERACTIVE if before >= 1.0 else BULK)


def test_demotions_are_counted_by_reason_not_by_tenant() -> None:
    def count(reason: str) -> float:
        return LANE_DEMOTIONS.labels(reason, "stage")._value.get()

    admission = InteractiveAdmission(TenantBudget(1.0, 1), clock=Clock(), heavy_bytes=0)
    before = count(TENANT_BUDGET)
    assert admission.place(upsert()).priority == INTERACTIVE
    assert admission.place(upsert(seq=2)).priority == BULK
    assert admission.place(upsert(tenant="other")).priority == INTERACTIVE
    assert count(TENANT_BUDGET) == before + 1
    labels = {s.labels.get("reason") for m in LANE_DEMOTIONS.collect() for s in m.samples}
    assert labels <= {TENANT_BUDGET, HEAVY}


def test_demotable() -> None:
    kinds = changes()
    assert [demotable(e) for e in kinds] == [True] + [False] * 7
    assert HEAVY != TENANT_BUDGET


# -- wired into the connector stage and the webhook --------------------------------------


async def test_the_stage_demotes_a_tenants_content_over_budget_and_nothing_else() -> None:
    """Tenant acme's third new document in a burst of 2 travels on in the bulk lane; its
    delete, ACL change and the narrowing of an over-budget upsert stay interactive and
    cost nothing; another tenant's edit and a bulk change are untouched."""
    cfg = ConnectorSettings(
        max_document_bytes=10_000, tenant_interactive_rate=0.5, tenant_interactive_burst=2
    )
    stage = ConnectorStage(Settings(), cfg, state=MemoryState())  # type: ignore[arg-type]
    stage.admission.clock = clock = Clock(100.0)
    await stage.start()
    batch: list[Change] = [
        upsert("acme", "wiki:a"),
        upsert("acme", "wiki:b"),
        upsert("acme", "wiki:c"),  # over budget
        SourceDelete(tenant_id="acme", document_id="wiki:d", source_seq=1),
        SourceAclChange(tenant_id="acme", document_id="wiki:e", source_seq=1, acl_groups=("x",)),
        upsert("globex", "wiki:a"),  # the same document id, another tenant
        with_lane(upsert("acme", "wiki:f"), BULK),
    ]
    results = await stage.handle_batch(batch, CTX)
    lanes = [[(o.topic, o.event.priority) for o in r] for r in results if isinstance(r, list)]
    assert lanes == [
        [("doc.fetched", INTERACTIVE)],
        [("doc.fetched", INTERACTIVE)],
        [("doc.fetched", BULK)],
        [("doc.control", INTERACTIVE)],
        [("doc.control", INTERACTIVE)],
        [("doc.fetched", INTERACTIVE)],
        [("doc.fetched", BULK)],
    ]
    # an over-budget upsert that narrows the ACL: its revocation still goes first,
    # interactive; only its content waits
    key = ("acme", "wiki:a")
    stage.state.rows[key] = StoredState(  # type: ignore[attr-defined]
        source_seq=1,
        acl_seq=1,
        content_hash="0" * 64,
        meta_hash="0" * 64,
        status="indexed",
        pending_seq=1,
        pending_status="indexed",
        acl_groups=("eng", "ops"),
    )
    outs = await stage.handle(upsert("acme", "wiki:a", seq=2), CTX)
    assert [(o.topic, o.event.priority) for o in outs] == [
        ("doc.control", INTERACTIVE),
        ("doc.fetched", BULK),
    ]
    clock.t += 2.0  # one token back (0.5/s)
    [again] = await stage.handle(upsert("acme", "wiki:g"), CTX)
    assert again.event.priority == INTERACTIVE
    await stage.stop()


def test_the_webhook_publishes_a_flood_in_the_bulk_lane() -> None:
    """Over its tenant's budget the webhook still accepts (202) and publishes every
    upsert, in the bulk lane; deletes and ACL changes keep their lane."""
    sink = Sink()
    with make_client(sink, tenant_interactive_rate=0.001, tenant_interactive_burst=2) as c:
        for _ in range(4):
            r = c.post("/v1/changes", content=body("upsert_inline.json"), headers=BEARER)
            assert r.status_code == 202, r.text
        for name in ("delete.json", "acl.json"):
            assert c.post("/v1/changes", content=body(name), headers=BEARER).status_code == 202
        last = c.post("/v1/changes", content=body("upsert_inline.json"), headers=BEARER)
    assert last.json()["priority"] == BULK
    assert [(t, e.event_type, e.priority) for t, e in sink.events] == [
        ("source.changes", "source.upsert", INTERACTIVE),
        ("source.changes", "source.upsert", INTERACTIVE),
        ("source.changes", "source.upsert", BULK),
        ("source.changes", "source.upsert", BULK),
        ("source.changes", "source.delete", INTERACTIVE),
        ("source.changes", "source.acl", INTERACTIVE),
        ("source.changes", "source.upsert", BULK),
    ]


def test_the_budget_is_on_by_default_and_zero_turns_it_off() -> None:
    cfg = ConnectorSettings()
    assert cfg.tenant_interactive_rate > 0 and cfg.tenant_interactive_burst >= 1
    off = InteractiveAdmission(TenantBudget(0.0, 1), clock=Clock())
    assert all(off.place(upsert(seq=i)).priority == INTERACTIVE for i in range(1, 500))


# -- bulk pacing: concurrent backfills take turns ----------------------------------------


class Pipeline:
    """A simulated bulk lane: one FIFO of (tenant, n) drained ``rate`` records per tick;
    a pacer's sleep is a tick."""

    def __init__(self, rate: int) -> None:
        self.queue: list[str] = []
        self.rate = rate
        self.t = 0.0
        self.consumed = 0

    async def backlog(self) -> tuple[int, int]:
        return len(self.queue), self.consumed

    async def tick(self, s: float) -> None:
        self.t += s
        self.consumed += len(self.queue[: self.rate])
        del self.queue[: self.rate]
        await asyncio.sleep(0)

    def clock(self) -> float:
        return self.t


def pacer(pipe: Pipeline, max_backlog: int, **kw: Any) -> BulkPacer:
    return BulkPacer(max_backlog, pipe.backlog, clock=pipe.clock, sleep=pipe.tick, **kw)


async def sync(pipe: Pipeline, p: BulkPacer | None, tenant: str, n: int) -> list[int]:
    """Publish n records; how many of *another* tenant's were queued ahead of each."""
    ahead = []
    for _ in range(n):
        if p is not None:
            await p.admit()
        ahead.append(sum(1 for t in pipe.queue if t != tenant))
        pipe.queue.append(tenant)
        await asyncio.sleep(0)  # the other sync may run
    return ahead


@given(
    max_backlog=st.integers(10, 300),
    big=st.integers(300, 3000),
    small=st.integers(1, 60),
    rate=st.integers(1, 40),
)
@settings(max_examples=60, deadline=None)
def test_a_small_backfill_never_waits_behind_a_big_ones_whole_backlog(
    max_backlog: int, big: int, small: int, rate: int
) -> None:
    """Two syncs at once, both paced: every record of the small one has fewer than
    max_backlog + two steps (each sync may publish one step past its last reading) of
    the big one's records ahead of it (unpaced: all of them)."""

    async def run() -> tuple[list[int], Pipeline]:
        pipe = Pipeline(rate)
        a, b = pacer(pipe, max_backlog), pacer(pipe, max_backlog)
        first = asyncio.ensure_future(sync(pipe, a, "a", big))
        for _ in range(5):  # the big one has started
            await asyncio.sleep(0)
        ahead = await sync(pipe, b, "b", small)
        await first
        return ahead, pipe

    ahead, _ = asyncio.run(run())
    assert max(ahead) < max_backlog + 2 * max(1, max_backlog // 10), ahead


async def test_pacing_reads_every_step_and_waits_while_full() -> None:
    pipe = Pipeline(rate=10)
    pipe.queue = ["x"] * 95
    p = pacer(pipe, 100, step=5)
    ahead = await sync(pipe, p, "a", 20)
    assert p.readings >= 4 and p.waited_s > 0 and not p.stalled
    assert max(ahead) <= 100
    off = pacer(pipe, 0)
    await sync(pipe, off, "a", 50)
    assert off.readings == 0  # 0 = off: never reads the backlog


async def test_a_pipeline_that_does_not_drain_stops_pacing() -> None:
    pipe = Pipeline(rate=0)  # stages stopped: nothing drains
    pipe.queue = ["x"] * 1000
    p = pacer(pipe, 100, step=10, poll_s=1.0, stall_s=30.0)
    await sync(pipe, p, "a", 50)  # returns: the sync is not held forever
    assert p.stalled and 30.0 <= p.waited_s <= 32.0
    assert len(pipe.queue) == 1050  # everything published


async def test_sync_asks_the_pacer_before_every_publish() -> None:
    """``ragline sync``'s execute: every upsert and delete waits for the pacer first."""
    src = FakeSource([item("fs:a"), item("fs:b")], {"fs:a": "c1", "fs:b": "c2"})
    stored = {"fs:gone": sync_st()}
    plan = await build_plan(src, stored, progress=False)
    pipe = Pipeline(rate=1)
    pipe.queue = ["x"] * 3
    p = pacer(pipe, 2, step=1)
    sink = SyncSink()
    done = await execute(plan, src, sink, stored=stored, progress=False, pacer=p)
    assert sum(done.values()) == len(sink.events) == 3
    assert p.readings >= 3 and p.waited_s > 0
