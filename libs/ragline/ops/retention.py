"""Retention sweeps (``ragline gc``): claim checks, the indexer's ledger, the embedding cache.

Every delete runs in batches of ``batch_size`` rows, each its own short transaction that
locks only the rows it deletes (``FOR UPDATE SKIP LOCKED``: a row a service is using
right now is skipped, not waited for), so a sweep never blocks the pipeline for long.
Cutoffs are taken once from the database clock at the start, so a dry run and the real
run that follows count the same rows.

Why each rule is safe:

* **claim checks** are referenced by messages on the pipeline topics and by dead letters.
  A message lives at most the topics' retention, and a claim check's ``created_at`` is
  refreshed whenever the same body is stored again (``ClaimCheckStore.put``), so a row
  older than the retention is referenced by no retained pipeline message. Dead letters
  can wait longer than that (a DLQ nobody drains, a longer DLQ retention): the sweep reads
  every pending dead letter (past the dlq tool group's committed offset, the same notion
  of "pending" as ``ragline dlq``) and keeps every claim check one references.
* **ledger rows** only turn a redelivered event into a re-emission of its recorded outcome;
  redelivery happens within the topics' retention. Past that, the ``source_seq`` /
  ``acl_seq`` guards of ``IndexWriter`` keep a replay harmless (it is applied as a skipped,
  stale event) and OpenSearch is re-synced for the touched document either way.
* **embedding cache** rows are a pure cache (text hash -> vector): a deleted row costs one
  re-embedding, never a wrong result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Self

import psycopg
from psycopg import sql
from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.ops.dlq_reader import DlqEntry, DlqReader
from ragline.ops.settings import OpsSettings
from ragline.store.claimcheck import CLAIM_HEADER
from ragline.store.pg_errors import pg_errors

__all__ = [
    "RetentionReport",
    "RetentionSettings",
    "Table",
    "TableReport",
    "claim_refs",
    "lru_excess",
    "pending_claim_refs",
    "run_gc",
]

Progress = Callable[[str, int], None]  # (table, rows deleted in this batch)


class Table(StrEnum):
    CLAIM_CHECKS = "claim_checks"
    LEDGER = "processed_events"
    EMBEDDING_CACHE = "embedding_cache"


class RetentionSettings(BaseSettings):
    """Retention of the tables that grow with traffic (``RAGLINE_RETENTION_*``).

    ``claim_check_days`` defaults to 14, twice Kafka's default ``log.retention.hours``
    (168 h = 7 days; neither docs/ nor the Helm chart sets a topic retention, so the
    broker default applies): a claim check must outlive every message that may still
    carry its key. ``ledger_days`` (30) only has to outlive redelivery, which also
    happens within the topics' retention. Both are checked against
    ``kafka_retention_days``: set that to your cluster's retention and a rule that could
    delete a row a retained message still needs is refused at start-up.
    """

    model_config = SettingsConfigDict(env_prefix="RAGLINE_RETENTION_", extra="ignore", frozen=True)

    claim_check_days: int = Field(
        default=14, ge=1, description="delete claim checks older than this (days)"
    )
    ledger_days: int = Field(
        default=30, ge=1, description="delete indexer ledger rows older than this (days)"
    )
    embedding_cache_days: int = Field(
        default=90, ge=1, description="delete embedding-cache rows unused for this long (days)"
    )
    embedding_cache_max_rows: int = Field(
        default=1_000_000, ge=0, description="then keep at most this many, least recently used go"
    )
    kafka_retention_days: float = Field(
        default=7.0,
        gt=0,
        description="retention of the pipeline topics on the broker (Kafka default: 7 days); "
        "claim_check_days and ledger_days must exceed it",
    )
    check_dead_letters: bool = Field(
        default=True,
        description="keep claim checks a pending dead letter references (reads the .dlq "
        "topics); off: claim_check_days must also exceed dlq_retention_days",
    )
    dlq_retention_days: float | None = Field(
        default=None, gt=0, description="retention of the .dlq topics; default kafka_retention_days"
    )
    batch_size: int = Field(default=1000, ge=1, le=100_000, description="rows per transaction")
    lock_timeout_ms: int = Field(
        default=5000, ge=1, description="a batch gives up (error) rather than wait longer"
    )

    @model_validator(mode="after")
    def _outlive_the_topics(self) -> Self:
        problems = []
        if self.claim_check_days <= self.kafka_retention_days:
            problems.append(
                f"claim_check_days ({self.claim_check_days}) must exceed kafka_retention_days "
                f"({self.kafka_retention_days:g}): retained messages may reference claim checks"
            )
        if self.ledger_days <= self.kafka_retention_days:
            problems.append(
                f"ledger_days ({self.ledger_days}) must exceed kafka_retention_days "
                f"({self.kafka_retention_days:g}): a redelivery must still find its ledger row"
            )
        dlq_days = self.dlq_retention_days or self.kafka_retention_days
        if not self.check_dead_letters and self.claim_check_days <= dlq_days:
            problems.append(
                f"with check_dead_letters off, claim_check_days ({self.claim_check_days}) "
                f"must exceed the dlq retention ({dlq_days:g} days)"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self


@dataclass(kw_only=True)
class TableReport:
    table: str
    rule: str
    eligible: int = 0  # rows the rules select (what a dry run would delete)
    deleted: int = 0
    kept_referenced: int = 0  # old enough, but a pending dead letter references them
    batches: int = 0
    seconds: float = 0.0
    error: str | None = None


@dataclass(kw_only=True)
class RetentionReport:
    dry_run: bool
    started_at: datetime
    tables: list[TableReport] = field(default_factory=list)
    dead_letters_scanned: int | None = None  # None: not read (dry run still reads them)

    @property
    def ok(self) -> bool:
        return all(t.error is None for t in self.tables)

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "started_at": self.started_at.isoformat(),
            "ok": self.ok,
            "dead_letters_scanned": self.dead_letters_scanned,
            "tables": [asdict(t) for t in self.tables],
        }


def lru_excess(*, total: int, aged_out: int, max_rows: int) -> int:
    """Rows the LRU cap removes after the age rule has removed ``aged_out`` of ``total``."""
    return max(0, total - aged_out - max_rows)


def claim_refs(entry: DlqEntry) -> set[str]:
    """Claim-check keys a dead letter needs: its own body's (a big DeadLetter) and the
    failed message's (every dead-lettered body is stored as a claim check)."""
    keys = set()
    if own := entry.headers.get(CLAIM_HEADER):
        keys.add(own)
    if entry.letter is not None and (orig := entry.letter.original_headers.get(CLAIM_HEADER)):
        keys.add(orig)
    return keys


async def pending_claim_refs(
    settings: Settings, *, group: str, read_timeout_s: float = 30.0
) -> tuple[set[str], int]:
    """Keys referenced by the pending dead letters of every .dlq topic, and how many
    records were read. Reads only; the group's offsets are not moved."""
    keys: set[str] = set()
    n = 0
    async with DlqReader(settings, group=group, read_timeout_s=read_timeout_s) as reader:
        for rng in await reader.ranges(await reader.existing(())):
            async for entry in reader.entries(rng):
                n += 1
                keys |= claim_refs(entry)
    return keys, n


# ---------------------------------------------------------------------------- SQL

_KEYS: dict[Table, tuple[str, ...]] = {
    Table.CLAIM_CHECKS: ("key",),
    Table.LEDGER: ("consumer", "event_id"),
    Table.EMBEDDING_CACHE: ("model", "revision", "text_hash"),
}


def _cols(table: Table) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(c) for c in _KEYS[table])


def _count_sql(table: Table, where: sql.Composable) -> sql.Composed:
    return sql.SQL("SELECT count(*) FROM {t} WHERE {w}").format(
        t=sql.Identifier(table.value), w=where
    )


def _delete_sql(table: Table, where: sql.Composable, order: str | None) -> sql.Composed:
    """One batch: pick up to %(limit)s unlocked rows (oldest first with ``order``), delete."""
    return sql.SQL(
        "DELETE FROM {t} WHERE ({k}) IN (SELECT {k} FROM {t} WHERE {w}{o}"
        " LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
    ).format(
        t=sql.Identifier(table.value),
        k=_cols(table),
        w=where,
        o=sql.SQL(" ORDER BY {}").format(sql.Identifier(order)) if order else sql.SQL(""),
    )


Conn = psycopg.AsyncConnection[Any]


async def _count(conn: Conn, query: sql.Composed, params: dict[str, Any]) -> int:
    cur = await conn.execute(query, params)
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _delete(
    conn: Conn,
    table: Table,
    where: sql.Composable,
    params: dict[str, Any],
    *,
    rep: TableReport,
    batch: int,
    budget: int | None = None,
    order: str | None = None,
    progress: Progress | None = None,
) -> None:
    """Delete in batches until none is left (or ``budget`` rows are gone)."""
    query = _delete_sql(table, where, order)
    left = budget
    while left is None or left > 0:
        limit = batch if left is None else min(batch, left)
        cur = await conn.execute(query, {**params, "limit": limit})
        n = cur.rowcount
        rep.batches += 1
        rep.deleted += n
        if progress is not None and n:
            progress(table.value, n)
        if left is not None:
            left -= n
        if n < limit:  # nothing (unlocked) left that matches
            return


# ---------------------------------------------------------------------------- sweeps


async def _claim_checks(
    conn: Conn,
    cfg: RetentionSettings,
    now: datetime,
    protected: set[str],
    rep: TableReport,
    *,
    dry_run: bool,
    progress: Progress | None,
) -> None:
    params = {"cutoff": now - timedelta(days=cfg.claim_check_days), "keep": sorted(protected)}
    old = sql.SQL("created_at < %(cutoff)s")
    where = sql.SQL("{} AND NOT ({} = ANY(%(keep)s))").format(old, sql.Identifier("key"))
    rep.eligible = await _count(conn, _count_sql(Table.CLAIM_CHECKS, where), params)
    if protected:
        kept = sql.SQL("{} AND {} = ANY(%(keep)s)").format(old, sql.Identifier("key"))
        rep.kept_referenced = await _count(conn, _count_sql(Table.CLAIM_CHECKS, kept), params)
    if not dry_run:
        await _delete(
            conn,
            Table.CLAIM_CHECKS,
            where,
            params,
            rep=rep,
            batch=cfg.batch_size,
            progress=progress,
        )


async def _ledger(
    conn: Conn,
    cfg: RetentionSettings,
    now: datetime,
    rep: TableReport,
    *,
    dry_run: bool,
    progress: Progress | None,
) -> None:
    params = {"cutoff": now - timedelta(days=cfg.ledger_days)}
    where = sql.SQL("processed_at < %(cutoff)s")
    rep.eligible = await _count(conn, _count_sql(Table.LEDGER, where), params)
    if not dry_run:
        await _delete(
            conn, Table.LEDGER, where, params, rep=rep, batch=cfg.batch_size, progress=progress
        )


async def _embedding_cache(
    conn: Conn,
    cfg: RetentionSettings,
    now: datetime,
    rep: TableReport,
    *,
    dry_run: bool,
    progress: Progress | None,
) -> None:
    t = Table.EMBEDDING_CACHE
    params = {"cutoff": now - timedelta(days=cfg.embedding_cache_days)}
    unused = sql.SQL("last_used_at < %(cutoff)s")
    aged = await _count(conn, _count_sql(t, unused), params)
    total = await _count(conn, _count_sql(t, sql.SQL("true")), {})
    excess = lru_excess(total=total, aged_out=aged, max_rows=cfg.embedding_cache_max_rows)
    rep.eligible = aged + excess
    if dry_run:
        return
    await _delete(conn, t, unused, params, rep=rep, batch=cfg.batch_size, progress=progress)
    # recount: rows embedded meanwhile count against the cap too
    total = await _count(conn, _count_sql(t, sql.SQL("true")), {})
    excess = lru_excess(total=total, aged_out=0, max_rows=cfg.embedding_cache_max_rows)
    if excess:
        await _delete(
            conn,
            t,
            sql.SQL("true"),
            {},
            rep=rep,
            batch=cfg.batch_size,
            budget=excess,
            order="last_used_at",
            progress=progress,
        )


def _rules(cfg: RetentionSettings) -> dict[Table, str]:
    return {
        Table.CLAIM_CHECKS: f"older than {cfg.claim_check_days} d"
        + (", unless a pending dead letter references it" if cfg.check_dead_letters else ""),
        Table.LEDGER: f"older than {cfg.ledger_days} d",
        Table.EMBEDDING_CACHE: f"unused for {cfg.embedding_cache_days} d, "
        f"then least recently used beyond {cfg.embedding_cache_max_rows:,} rows",
    }


async def run_gc(
    settings: Settings,
    *,
    retention: RetentionSettings,
    tables: Iterable[Table] = tuple(Table),
    dry_run: bool = False,
    dlq_group: str | None = None,
    progress: Progress | None = None,
    ops: OpsSettings,
) -> RetentionReport:
    """Sweep the chosen tables (as the admin DSN). A table whose sweep fails carries the
    error in its report and the others still run; a claim-check sweep whose dead letters
    cannot be read deletes nothing."""
    cfg = retention
    chosen = [t for t in Table if t in set(tables)]
    rules = _rules(cfg)
    with pg_errors():
        conn = await psycopg.AsyncConnection.connect(settings.admin_dsn(), autocommit=True)
    async with conn:
        with pg_errors():
            await conn.execute(
                "SELECT set_config('lock_timeout', %s, false)", (f"{cfg.lock_timeout_ms}ms",)
            )
            cur = await conn.execute("SELECT now()")
            row = await cur.fetchone()
        assert row is not None
        now: datetime = row[0]
        report = RetentionReport(dry_run=dry_run, started_at=now)
        for table in chosen:
            rep = TableReport(table=table.value, rule=rules[table])
            report.tables.append(rep)
            t0 = time.perf_counter()
            try:
                with pg_errors():
                    if table is Table.CLAIM_CHECKS:
                        protected: set[str] = set()
                        if cfg.check_dead_letters:
                            protected, n = await pending_claim_refs(
                                settings,
                                group=dlq_group or ops.dlq_group,
                                read_timeout_s=ops.dlq_read_timeout_s,
                            )
                            report.dead_letters_scanned = n
                        await _claim_checks(
                            conn, cfg, now, protected, rep, dry_run=dry_run, progress=progress
                        )
                    elif table is Table.LEDGER:
                        await _ledger(conn, cfg, now, rep, dry_run=dry_run, progress=progress)
                    else:
                        await _embedding_cache(
                            conn, cfg, now, rep, dry_run=dry_run, progress=progress
                        )
            except RaglineError as exc:
                rep.error = f"{type(exc).__name__}: {exc}"
            finally:
                rep.seconds = round(time.perf_counter() - t0, 3)
    return report
