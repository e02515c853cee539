"""Identifier specificity read through the trigram index (migration 0070) instead of a
strpos() scan of every child chunk: same counts, LIKE's wildcards taken literally, and
the planner can answer the lookup from the index."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql
from query_helpers import GROUP_A, Corpus

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.retrieval.specificity import IdentifierFrequency, df_query, like_pattern
from ragline.retrieval.versions import VERSIONS_SQL
from ragline.store.pool import open_pool

pytestmark = pytest.mark.integration


async def test_wildcards_in_an_identifier_are_literal(stack: Settings, corpus: Corpus) -> None:
    """``_`` and ``%`` are LIKE wildcards: ``err_4711`` must not count the documents that
    hold ``err-4711`` (a plain ``LIKE '%' || ident || '%'`` would)."""
    pool = await open_pool(stack.query_dsn(), name="ident-like-test")
    try:
        freq = IdentifierFrequency(pool)
        a = Principal(tenant=corpus.tenant, groups=(GROUP_A,), subject="t")
        stats = await freq.get(a, ["err_4711", "err%4711", "err-4711", "err\\4711"])
        assert stats is not None
        assert stats.df["err-4711"] == 1
        assert stats.df["err_4711"] == 0 and stats.df["err%4711"] == 0
        assert stats.df["err\\4711"] == 0
    finally:
        await pool.close()


async def test_the_lookup_can_use_the_trigram_index(stack: Settings, corpus: Corpus) -> None:
    """The indexed expression and the lookup's expression are the same (a typo in either
    silently turns every lookup back into a scan). Read as the owner (no RLS predicate
    whose own index a tiny test table would favour), with sequential scans priced out."""
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        await conn.execute("SET enable_seqscan = off")
        cur = await conn.execute(sql.SQL("EXPLAIN ") + df_query(["err-4711", "bcanary"]))
        plan = "\n".join(str(r[0]) for r in await cur.fetchall())
    assert plan.count("chunks_child_search_trgm") == 2, plan


def test_like_pattern_escapes() -> None:
    assert like_pattern("a_b%c\\d") == "%a\\_b\\%c\\\\d%"


async def test_version_labels_read_through_their_index(stack: Settings, corpus: Corpus) -> None:
    """retrieval/versions.py's read matches migration 0072's partial index (a tenant's
    versioned, indexed documents only)."""
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        await conn.execute("SET enable_seqscan = off")
        cur = await conn.execute(
            "EXPLAIN " + VERSIONS_SQL + " AND tenant_id = %s", (corpus.tenant,)
        )
        plan = "\n".join(str(r[0]) for r in await cur.fetchall())
    assert "documents_versioned_idx" in plan, plan
