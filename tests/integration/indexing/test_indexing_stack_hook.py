"""The ``ragline stack up`` hook rebuilds an emptied OpenSearch from Postgres."""

from __future__ import annotations

import pytest
from indexing_helpers import indexed, os_hits

from ragline.indexing.samples import embedded_event
from ragline.indexing.stack_hook import rebuild_opensearch
from ragline.runtime.stack.hooks import POST_UP_HOOKS, PostUpContext
from ragline.runtime.stack.settings import Component
from ragline.store.os_index import alias_targets, index_name

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def test_hook_is_registered() -> None:
    assert "ragline.indexing.stack_hook:rebuild_opensearch" in POST_UP_HOOKS


async def test_restarted_opensearch_is_rebuilt(stack, apply, os_client, tenant) -> None:
    ev = embedded_event(
        tenant_id=tenant,
        document_id="hook:1",
        source_seq=1,
        texts=["survives a restart of the search server"],
    )
    indexed((await apply([ev]))[0])
    alias = index_name(stack.opensearch_index_prefix, tenant)
    for concrete in await alias_targets(os_client, alias):
        await os_client.indices.delete(index=concrete)
    summary = await rebuild_opensearch(
        PostUpContext(settings=stack, started=frozenset({Component.OPENSEARCH}))
    )
    assert summary is not None and "rebuilt" in summary
    assert await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": "restart"}}
    )
    # OpenSearch kept running: only a cheap lag repair
    summary = await rebuild_opensearch(PostUpContext(settings=stack, started=frozenset()))
    assert summary == "opensearch repair: 0 lagging document(s) synced"
