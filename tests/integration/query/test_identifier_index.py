"""Identifier specificity (``ident_match``: the analyzer's word splitting, behind an
escaped LIKE prefilter) and the release-label read through its partial index (migration
0072)."""

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


async def test_identifier_lookup_matches_as_the_analyzer_splits(
    stack: Settings, corpus: Corpus
) -> None:
    """The corpus spells ``ERR-4711``; the lookup counts the spellings the lexical
    analyzer takes for the same tokens, and nothing else: word boundaries hold, and LIKE
    wildcards or regular-expression syntax in an identifier are never patterns (a plain
    ``LIKE '%' || ident || '%'`` would count ``e%1`` there, a raw ``~`` ``e.*1``)."""
    pool = await open_pool(stack.query_dsn(), name="ident-like-test")
    try:
        freq = IdentifierFrequency(pool)
        a = Principal(tenant=corpus.tenant, groups=(GROUP_A,), subject="t")
        same = ["err-4711", "err4711", "err_4711", "err 4711", "err.4711", "err\\4711"]
        other = ["rr-4711", "err-471", "err-47111", "e%1", "e.*1", "e_r_r-4711", "(", ""]
        stats = await freq.get(a, same + other)
        assert stats is not None
        assert {i: stats.df[i] for i in same} == dict.fromkeys(same, 1)
        assert {i: stats.df.get(i, 0) for i in other} == dict.fromkeys(other, 0)
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
