"""The query's words in the caller's corpus (term_stats.py; issue 21 defect 5): counted
under RLS in one pass over the caller's chunks; unreadable scopes never count, and a
caller with too many chunks to parse gets none."""

from __future__ import annotations

import pytest
from query_helpers import GROUP_A, GROUP_B, Corpus

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.retrieval.term_stats import QueryTermFrequency
from ragline.store.pool import open_pool

pytestmark = pytest.mark.integration


async def test_counts_are_the_callers_own(stack: Settings, corpus: Corpus) -> None:
    pool = await open_pool(stack.query_dsn(), name="term-df-test")
    try:
        terms = QueryTermFrequency(pool)
        a = Principal(tenant=corpus.tenant, groups=(GROUP_A,), subject="t")
        b = Principal(tenant=corpus.tenant, groups=(GROUP_B,), subject="t")
        other = Principal(tenant=corpus.other_tenant, groups=(GROUP_A,), subject="t")
        q = "Which payroll vacation rules apply?"
        top = "Unused vacation days expire at the end of March of the following year."
        sa, sb, so = [await terms.get(p, q, top) for p in (a, b, other)]
        assert sa and sb and so
        # "payroll" is only in group B's document (its title is in each of its 3 chunks)
        assert sa.df["payrol"] == 0 and sb.df["payrol"] == 3 and so.df["payrol"] == 0
        assert sa.df["vacat"] == 3 and sb.df["vacat"] == 1 and so.df["vacat"] == 1
        assert so.chunks == 2 and sa.chunks > so.chunks
        assert "vacat" in sa.top and "payrol" not in sa.top  # the top hit's words
        assert set(sa.df) == {"payrol", "vacat", "rule", "appli"}  # stop words dropped
        assert (sa.missing_share or 0) > 0 and (sb.missing_share or 0) < (sa.missing_share or 0)
        # a query of stop words only: nothing to weigh
        assert await terms.get(a, "which of the and", top) is None
        # hostile text reaches Postgres harmlessly
        hostile = await terms.get(a, "vacation \x00 \ud800 " + "x" * 50_000, "\x00")
        assert hostile is not None and hostile.df["vacat"] == 3
    finally:
        await pool.close()


async def test_large_corpora_get_no_statistics(stack: Settings, corpus: Corpus) -> None:
    """Above ``max_chunks`` visible child chunks the lookup is skipped (no index can serve
    it under RLS): None, so the similarity threshold decides alone."""
    pool = await open_pool(stack.query_dsn(), name="term-max-test")
    try:
        a = Principal(tenant=corpus.tenant, groups=(GROUP_A,), subject="t")
        assert await QueryTermFrequency(pool, max_chunks=1).get(a, "vacation days", "") is None
        small = await QueryTermFrequency(pool, max_chunks=10_000).get(a, "vacation days", "")
        assert small is not None and small.df["vacat"] == 3
    finally:
        await pool.close()
