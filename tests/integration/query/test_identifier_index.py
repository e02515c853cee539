"""Identifier specificity by LIKE (identifier escaped: its wildcards are literal) and the
release-label read through its partial index (migration 0072)."""

from __future__ import annotations

import pytest
from query_helpers import GROUP_A, Corpus

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.retrieval.scope import rls_transaction
from ragline.retrieval.specificity import IdentifierFrequency, like_pattern
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


def test_like_pattern_escapes() -> None:
    assert like_pattern("a_b%c\\d") == "%a\\_b\\%c\\\\d%"


async def test_version_labels_read_through_their_index(stack: Settings, corpus: Corpus) -> None:
    """retrieval/versions.py's read is served by migration 0072's partial index for the
    query role, under RLS (its quals are leakproof, unlike LIKE or @@: migration 0073)."""
    pool = await open_pool(stack.query_dsn(), name="versions-plan-test")
    try:
        a = Principal(tenant=corpus.tenant, groups=(GROUP_A,), subject="t")
        async with rls_transaction(pool, a) as conn:
            await conn.execute("SET LOCAL enable_seqscan = off")
            cur = await conn.execute("EXPLAIN " + VERSIONS_SQL)
            plan = "\n".join(str(r[0]) for r in await cur.fetchall())
        assert "documents_versioned_idx" in plan, plan
    finally:
        await pool.close()
