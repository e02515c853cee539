"""``restore_opensearch`` (run by ``ragline stack up``/``up``): the index survives
restarts, so it only repairs lagging documents and rebuilds a tenant whose index is gone
(real drift)."""

from __future__ import annotations

import re

import pytest
from indexing_helpers import indexed, os_hits

from ragline.indexing.rebuild import restore_opensearch
from ragline.indexing.samples import embedded_event
from ragline.indexing.settings import IndexerSettings
from ragline.platform.stack.hooks import PostUpContext, local_hooks, run_post_up_hooks
from ragline.platform.stack.settings import Component
from ragline.store.os_index import alias_targets, index_name

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def test_a_missing_tenant_index_is_rebuilt(stack, apply, os_client, tenant) -> None:
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
    # what `up` runs: the local hooks, by name
    ctx = PostUpContext(settings=stack, started=frozenset({Component.OPENSEARCH}))
    [(name, summary)] = await run_post_up_hooks(ctx, local_hooks(IndexerSettings()))
    assert name == "repair_opensearch"
    # the session's stack is shared: other tests' tenants may lack an index too (tests that
    # write Postgres alone or delete indexes), so count ours among them, not alone
    found = re.search(r"(\d+) missing tenant index\(es\) rebuilt \((\d+) chunks\)", summary)
    assert found is not None and int(found.group(1)) >= 1 and int(found.group(2)) >= 1, summary
    assert await os_hits(
        os_client, stack.opensearch_index_prefix, tenant, {"match": {"text": "restart"}}
    )
    # nothing drifted any more: no tenant index is rebuilt again
    summary = await restore_opensearch(stack, IndexerSettings())
    assert "missing" not in summary and summary.startswith("opensearch repair: ")
