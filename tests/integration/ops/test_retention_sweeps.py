"""``ragline gc`` against the real stack: rows seeded with old timestamps go, recent ones
and claim checks a pending dead letter references stay, a dry run deletes nothing.

The sweeps are global (the session's other tests share the tables), so every assertion
looks at this test's own rows, and the rules are chosen so only seeded rows qualify.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
import pytest_asyncio
from pgvector.psycopg import register_vector_async

from ragline.config import Settings
from ragline.embedding.cache import PgVectorCache
from ragline.errors import PermanentError
from ragline.events import Topics, dlq_topic
from ragline.hashing import sha256_hex
from ragline.ops.dlq import Action, run_dlq
from ragline.ops.retention import RetentionSettings, Table, run_gc
from ragline.ops.settings import OpsSettings
from ragline.runtime.deadletter import dead_letter
from ragline.runtime.publisher import EventPublisher
from ragline.store.claimcheck import CLAIM_HEADER, ClaimCheckStore
from ragline.store.pool import open_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

Conn = psycopg.AsyncConnection[Any]


@pytest_asyncio.fixture(loop_scope="session")
async def conn(stack: Settings) -> AsyncIterator[Conn]:
    c = await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True)
    await register_vector_async(c)
    yield c
    await c.close()


async def _claim(conn: Conn, body: bytes, age_days: float) -> str:
    key = sha256_hex(body)
    await conn.execute(
        "INSERT INTO claim_checks (key, body, size_bytes, created_at)"
        " VALUES (%s, %s, %s, now() - make_interval(secs => %s))",
        (key, body, len(body), age_days * 86400),
    )
    return key


async def _present(conn: Conn, table: str, col: str, values: list[str]) -> set[str]:
    q = psycopg.sql.SQL("SELECT {c} FROM {t} WHERE {c} = ANY(%s)").format(
        c=psycopg.sql.Identifier(col), t=psycopg.sql.Identifier(table)
    )
    cur = await conn.execute(q, (values,))
    return {str(r[0]) for r in await cur.fetchall()}


async def _publish_dead_letter(
    settings: Settings, tenant: str, *, original_claim: str, big: bool = False
) -> None:
    """A dead letter as the runtime writes it: the failed body is a claim-check stub.
    ``big``: the DeadLetter itself exceeds the message limit and is claim-checked too."""
    headers = {CLAIM_HEADER: original_claim, "event-type": "doc_fetched"}
    if big:
        headers["padding"] = "x" * (settings.kafka_max_message_bytes + 10)
    dl = dead_letter(
        stage="parser",
        topic=Topics.DOC_FETCHED.value,
        partition=0,
        offset=1,
        key=f"fs:{tenant}/a".encode(),
        value=ClaimCheckStore.stub(original_claim),
        headers=headers,
        exc=PermanentError("unsupported layout"),
        attempts=1,
    )
    async with EventPublisher(settings) as pub:
        await pub.publish_raw(
            dlq_topic(Topics.DOC_FETCHED.value),
            dl.model_dump_json().encode(),
            key=f"fs:{tenant}/a",
            headers={"event-type": "dead_letter", "error-class": dl.error_class},
        )


async def test_claim_checks_old_unreferenced_go(stack: Settings, conn: Conn, tenant: str) -> None:
    group = f"itest-gc-{uuid.uuid4().hex[:8]}"
    tag = uuid.uuid4().hex
    old_free = await _claim(conn, f"{tag} old free".encode(), 20)
    old_purged = await _claim(conn, f"{tag} old, dead letter purged".encode(), 20)
    old_pending = await _claim(conn, f"{tag} old, dead letter pending".encode(), 20)
    recent = await _claim(conn, f"{tag} recent".encode(), 10)
    reput = await _claim(conn, f"{tag} old but stored again".encode(), 20)
    # a dead letter the dlq tool already purged does not protect its claim check
    await _publish_dead_letter(stack, tenant, original_claim=old_purged)
    await run_dlq(stack, Action.PURGE, group=group, progress=False, ops=OpsSettings())
    await _publish_dead_letter(stack, tenant, original_claim=old_pending)
    # a big dead letter: its own body is a claim check (stored now), backdated below
    await _publish_dead_letter(stack, tenant, original_claim=old_pending, big=True)
    cur = await conn.execute(
        "SELECT key FROM claim_checks WHERE size_bytes > %s AND created_at > now() - interval"
        " '1 minute' ORDER BY created_at DESC LIMIT 1",
        (stack.kafka_max_message_bytes,),
    )
    row = await cur.fetchone()
    assert row is not None
    own = str(row[0])
    await conn.execute(
        "UPDATE claim_checks SET created_at = now() - interval '30 days' WHERE key = %s", (own,)
    )
    # the same body published again refreshes the row (ClaimCheckStore.put)
    store = ClaimCheckStore(stack.admin_dsn())
    assert await store.put(f"{tag} old but stored again".encode()) == reput
    await store.close()

    mine = [old_free, old_purged, old_pending, recent, reput, own]
    dry = await run_gc(
        stack,
        tables=[Table.CLAIM_CHECKS],
        dry_run=True,
        dlq_group=group,
        retention=RetentionSettings(),
        ops=OpsSettings(),
    )
    (rep,) = dry.tables
    assert rep.error is None
    assert rep.eligible >= 2 and rep.deleted == 0 and rep.kept_referenced == 2
    assert dry.dead_letters_scanned is not None and dry.dead_letters_scanned >= 2
    assert await _present(conn, "claim_checks", "key", mine) == set(mine)

    report = await run_gc(
        stack,
        retention=RetentionSettings(batch_size=1),
        tables=[Table.CLAIM_CHECKS],
        dlq_group=group,
        ops=OpsSettings(),
    )
    (rep,) = report.tables
    assert report.ok and rep.deleted == rep.eligible == dry.tables[0].eligible
    assert rep.batches == rep.deleted + 1  # one row per batch, then an empty batch
    assert await _present(conn, "claim_checks", "key", mine) == {recent, old_pending, own, reput}


async def test_unreadable_dead_letters_keep_every_claim_check(stack: Settings, conn: Conn) -> None:
    old = await _claim(conn, f"{uuid.uuid4().hex} old".encode(), 20)
    broken = stack.model_copy(update={"kafka_bootstrap": "127.0.0.1:9"})
    report = await run_gc(
        broken,
        tables=[Table.CLAIM_CHECKS, Table.LEDGER],
        retention=RetentionSettings(),
        ops=OpsSettings(),
    )
    claims, ledger = report.tables
    assert claims.error is not None and "kafka" in claims.error.lower()
    assert claims.deleted == 0 and ledger.error is None and not report.ok
    assert await _present(conn, "claim_checks", "key", [old]) == {old}


async def _ledger_row(conn: Conn, consumer: str, event_id: str, age_days: float) -> None:
    await conn.execute(
        "INSERT INTO processed_events (consumer, event_id, tenant_id, document_id, source_seq,"
        " outcome, processed_at) VALUES (%s, %s, 't', 'd', 1, '{}',"
        " now() - make_interval(secs => %s))",
        (consumer, event_id, age_days * 86400),
    )


async def test_ledger_rows_older_than_the_rule_go(stack: Settings, conn: Conn) -> None:
    consumer = f"itest-{uuid.uuid4().hex[:8]}"
    ages = {"e31": 31, "e45": 45, "e400": 400, "e29": 29, "e0": 0}
    for ev, age in ages.items():
        await _ledger_row(conn, consumer, ev, age)

    async def mine() -> set[str]:
        cur = await conn.execute(
            "SELECT event_id FROM processed_events WHERE consumer = %s", (consumer,)
        )
        return {str(r[0]) for r in await cur.fetchall()}

    dry = await run_gc(
        stack, tables=[Table.LEDGER], dry_run=True, retention=RetentionSettings(), ops=OpsSettings()
    )
    assert dry.tables[0].eligible >= 3 and await mine() == set(ages)
    report = await run_gc(
        stack, tables=[Table.LEDGER], retention=RetentionSettings(batch_size=2), ops=OpsSettings()
    )
    assert report.ok and report.tables[0].deleted >= 3
    assert report.dead_letters_scanned is None  # the claim-check sweep did not run
    assert await mine() == {"e29", "e0"}


async def _cache_row(conn: Conn, model: str, text_hash: str, used_days_ago: float) -> None:
    await conn.execute(
        "INSERT INTO embedding_cache (model, revision, text_hash, dim, embedding, last_used_at)"
        " VALUES (%s, 'r1', %s, 3, %s, now() - make_interval(secs => %s))",
        (model, text_hash, np.array([1, 0, 0], dtype=np.float32), used_days_ago * 86400),
    )


async def test_embedding_cache_age_then_lru_cap(stack: Settings, conn: Conn) -> None:
    model = f"itest-{uuid.uuid4().hex[:8]}"
    ages = {"h100": 100, "h50": 50, "h40": 40, "h30": 30, "h0": 0}
    for h, age in ages.items():
        await _cache_row(conn, model, h, age)
    cur = await conn.execute("SELECT count(*) FROM embedding_cache")
    row = await cur.fetchone()
    assert row is not None
    total = int(row[0])
    # the other tests' rows are all recent: a cap of total - 3 ages out h100 (unused for
    # more than 90 days) and evicts the two least recently used of the rest (h50, h40)
    cfg = RetentionSettings(embedding_cache_max_rows=total - 3, batch_size=1)

    async def mine() -> set[str]:
        c = await conn.execute("SELECT text_hash FROM embedding_cache WHERE model = %s", (model,))
        return {str(r[0]) for r in await c.fetchall()}

    dry = await run_gc(
        stack, tables=[Table.EMBEDDING_CACHE], retention=cfg, dry_run=True, ops=OpsSettings()
    )
    assert dry.tables[0].eligible == 3 and await mine() == set(ages)
    report = await run_gc(stack, tables=[Table.EMBEDDING_CACHE], retention=cfg, ops=OpsSettings())
    assert report.ok and report.tables[0].deleted == 3
    assert await mine() == {"h30", "h0"}


async def test_cache_hit_touches_last_used_at_once_a_day(stack: Settings, conn: Conn) -> None:
    model = f"itest-{uuid.uuid4().hex[:8]}"
    await _cache_row(conn, model, "stale", 30)
    await _cache_row(conn, model, "fresh", 0.5)
    pool = await open_pool(stack.admin_dsn(), name="itest-gc", max_size=1)
    try:
        cache = PgVectorCache(pool, model=model, revision="r1")
        got = await cache.get(["stale", "fresh", "missing"])
    finally:
        await pool.close()
    assert set(got) == {"stale", "fresh"}
    cur = await conn.execute(
        "SELECT text_hash, now() - last_used_at FROM embedding_cache WHERE model = %s", (model,)
    )
    age = {str(h): a for h, a in await cur.fetchall()}
    assert age["stale"] < timedelta(minutes=5)  # touched
    assert timedelta(hours=11) < age["fresh"] < timedelta(hours=13)  # left alone


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", "gc", "--no-progress", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )


async def test_cli_dry_run_then_sweep(stack: Settings, conn: Conn) -> None:
    consumer = f"itest-{uuid.uuid4().hex[:8]}"
    await _ledger_row(conn, consumer, "old", 60)
    await _ledger_row(conn, consumer, "new", 1)
    dry = _cli("--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    out = json.loads(dry.stdout)
    assert out["dry_run"] and out["ok"]
    assert [t["table"] for t in out["tables"]] == [t.value for t in Table]
    assert all(t["deleted"] == 0 for t in out["tables"])
    cur = await conn.execute(
        "SELECT count(*) FROM processed_events WHERE consumer = %s", (consumer,)
    )
    assert (await cur.fetchone()) == (2,)

    done = _cli("--table", "processed_events", "--batch-size", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("processed_events   deleted")
    cur = await conn.execute(
        "SELECT event_id FROM processed_events WHERE consumer = %s", (consumer,)
    )
    assert await cur.fetchall() == [("new",)]

    bad = _cli("--batch-size", "0")
    assert bad.returncode == 2 and "invalid settings" in bad.stderr


async def test_republished_stub_restarts_its_claim_clock(stack: Settings, conn: Conn) -> None:
    """A replay/requeue publishes a stub again: its body's age restarts, so a sweep right
    after never deletes what the replayed message needs; a swept body is a clear error."""
    from ragline.errors import PermanentError
    from ragline.runtime.publisher import EventPublisher

    tag = uuid.uuid4().hex
    old = await _claim(conn, f"{tag} replayed after three weeks".encode(), 21)
    async with EventPublisher(stack, service="test") as pub:
        await pub.publish_raw(
            "doc.fetched", ClaimCheckStore.stub(old), key="d", headers={CLAIM_HEADER: old}
        )
        cur = await conn.execute(
            "SELECT now() - created_at < interval '1 minute' FROM claim_checks WHERE key = %s",
            (old,),
        )
        assert (await cur.fetchone()) == (True,)
        gone = sha256_hex(f"{tag} never stored".encode())
        with pytest.raises(PermanentError, match="is gone"):
            await pub.publish_raw(
                "doc.fetched", ClaimCheckStore.stub(gone), key="d", headers={CLAIM_HEADER: gone}
            )
