"""Identifier specificity (``ident_match``'s test, as phrases over the lexical index's
``ident`` field) and the release-label read through its partial index (migration 0072)."""

from __future__ import annotations

import pytest
from query_corpus import Doc, seed
from query_helpers import GROUP_A, Corpus

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.abstain import IdentifierStats
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.lexical import LexicalSearcher
from ragline.retrieval.scope import rls_transaction
from ragline.retrieval.specificity import IdentifierFrequency
from ragline.retrieval.versions import VERSIONS_SQL
from ragline.store.os_client import make_client
from ragline.store.os_index import index_name
from ragline.store.pool import open_pool

pytestmark = pytest.mark.integration


async def test_identifier_lookup_matches_as_the_analyzer_splits(
    stack: Settings, corpus: Corpus
) -> None:
    """The corpus spells ``ERR-4711``; the lookup counts the spellings the lexical
    analyzer takes for the same tokens, and nothing else: word boundaries hold, and
    wildcards or regular-expression syntax in an identifier are never patterns (``e%1``,
    ``e.*1``)."""
    os_client = make_client(stack)
    try:
        freq = IdentifierFrequency(
            LexicalSearcher(os_client, index_prefix=stack.opensearch_index_prefix),
            timeout_ms=30_000,  # a loaded CI machine: not the production 1 s
        )
        a = Principal(tenant=corpus.tenant, groups=(GROUP_A,), subject="t")
        same = ["err-4711", "err4711", "err_4711", "err 4711", "err.4711", "err\\4711"]
        other = ["rr-4711", "err-471", "err-47111", "e%1", "e.*1", "e_r_r-4711", "(", ""]
        stats = await freq.get(a, same + other)
        assert stats is not None
        assert {i: stats.df[i] for i in same} == dict.fromkeys(same, 1)
        assert {i: stats.df.get(i, 0) for i in other} == dict.fromkeys(other, 0)
    finally:
        await os_client.close()


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


async def test_an_index_older_than_the_ident_field_gives_no_statistics(
    stack: Settings, embedder: QueryEmbedder
) -> None:
    """Documents written before mapping version 4 carry no ``ident``: counting them would
    say "in no document" and abstain, so the lookup answers None (the rule's fallback)
    until a reindex; a tenant with no index yet has no documents at all."""
    tenant = unique_tenant("iv")
    docs = [
        Doc(document_id="v:1", title="Runbook", texts=("Restart AGW-4290.",), groups=(GROUP_A,))
    ]
    pool = await open_pool(stack.admin_dsn(), name="ident-version-seed")
    client = make_client(stack)
    prefix = stack.opensearch_index_prefix
    try:
        await seed(pool, client, prefix, tenant, docs, embedder)
        a = Principal(tenant=tenant, groups=(GROUP_A,), subject="t")
        lexical = LexicalSearcher(client, index_prefix=prefix)
        stats = await IdentifierFrequency(lexical, timeout_ms=30_000).get(a, ["agw4290"])
        assert stats == IdentifierStats(documents=1, df={"agw4290": 1})
        await client.indices.put_mapping(
            index=index_name(prefix, tenant), body={"_meta": {"ragline_mapping_version": 3}}
        )
        old = IdentifierFrequency(lexical, timeout_ms=30_000)
        assert await old.get(a, ["agw4290"]) is None
        nobody = Principal(tenant=unique_tenant("iv"), groups=(GROUP_A,), subject="t")
        assert await old.get(nobody, ["agw4290"]) == IdentifierStats(documents=0, df={"agw4290": 0})
    finally:
        await client.close()
        await pool.close()
