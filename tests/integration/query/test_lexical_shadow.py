"""A gate of a shadow space reads the tenant's shadow lexical index while one is being
built (``LexicalSearcher.reading_shadow``), and the live index when there is none; the
ordinary searcher never sees the shadow."""

from __future__ import annotations

import pytest
from query_corpus import Doc, seed

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.lexical import LexicalSearcher
from ragline.store.os_bulk import bulk_index
from ragline.store.os_client import make_client
from ragline.store.os_index import index_name, open_shadow
from ragline.store.pool import open_pool

pytestmark = pytest.mark.integration


async def test_the_shadow_reader_reads_the_shadow_index_when_there_is_one(
    stack: Settings, embedder: QueryEmbedder
) -> None:
    tenant = unique_tenant("sh")
    docs = [Doc(document_id="l:1", title="Live", texts=("Quokka habitats live.",), groups=("g",))]
    pool = await open_pool(stack.admin_dsn(), name="lexical-shadow-seed")
    client = make_client(stack)
    prefix = stack.opensearch_index_prefix
    who = Principal(tenant=tenant, groups=("g",), subject="t")
    live = LexicalSearcher(client, index_prefix=prefix)
    gate = live.reading_shadow()
    try:
        await seed(pool, client, prefix, tenant, docs, embedder)
        # no shadow index yet: the gate reads the live one
        assert (
            [h.chunk_id for h in await gate.search(who, "quokka", [], limit=5)]
            == [h.chunk_id for h in await live.search(who, "quokka", [], limit=5)]
            != []
        )
        shadow = await open_shadow(client, index_name(prefix, tenant))
        src = {"chunk_id": "s:1", "tenant_id": tenant, "document_id": "s:doc"}
        src |= {"text": "Quokka burrows in the shadow.", "acl_groups": ["g"], "superseded": False}
        await bulk_index(client, shadow, [("s:1", src)], refresh="true", require_alias=False)
        assert [h.chunk_id for h in await gate.search(who, "quokka", [], limit=5)] == ["s:1"]
        assert "s:1" not in [h.chunk_id for h in await live.search(who, "quokka", [], limit=5)]
    finally:
        await client.close()
        await pool.close()
