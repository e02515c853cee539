"""``_bulk`` item errors are handled per item on the real engine: a chunk OpenSearch
rejects for good (a mapping rejection) quarantines its document with the reason, and its
neighbours in the same bulk request are indexed."""

from __future__ import annotations

import pytest
from indexing_helpers import indexed
from opensearchpy import AsyncOpenSearch

from ragline.config import Settings
from ragline.errors import QuarantineError
from ragline.events import ChunkLevel, DocEmbedded
from ragline.indexing.samples import embedded_event
from ragline.store.os_index import chunk_mapping, concrete_name, index_name

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _doc(tenant: str, name: str, page: int | None, *, seq: int = 1) -> DocEmbedded:
    ev = embedded_event(
        tenant_id=tenant,
        document_id=name,
        source_seq=seq,
        texts=[f"{name} first part of the report, version {seq}.", f"{name} second part."],
        acl_groups=("staff",),
    )
    chunks = tuple(
        c.model_copy(update={"page_start": page}) if c.level is ChunkLevel.CHILD else c
        for c in ev.chunks
    )
    return ev.model_copy(update={"chunks": chunks})


async def _byte_page_index(os_client: AsyncOpenSearch, stack: Settings, tenant: str) -> str:
    """A tenant index whose mapping (made elsewhere, e.g. by an older version) holds page
    numbers in a byte: page 500 is a mapping rejection, no page is fine."""
    alias = index_name(stack.opensearch_index_prefix, tenant)
    mapping = chunk_mapping()
    mapping["mappings"]["properties"]["page_start"] = {"type": "byte"}
    await os_client.indices.create(
        index=concrete_name(alias, 0), body={**mapping, "aliases": {alias: {}}}
    )
    return alias


async def test_a_rejected_chunk_quarantines_only_its_document(
    stack: Settings, apply, admin, os_client: AsyncOpenSearch, tenant: str
) -> None:
    alias = await _byte_page_index(os_client, stack, tenant)
    events = [_doc(tenant, "ok:1", None), _doc(tenant, "bad:1", 500), _doc(tenant, "ok:2", 7)]
    results = await apply(events)

    indexed(results[0])
    indexed(results[2])
    err = results[1]
    assert isinstance(err, QuarantineError), err
    assert err.reason_code == "opensearch_rejected"
    assert "mapper_parsing_exception" in str(err) and "500" not in str(err)  # no value

    await os_client.indices.refresh(index=alias)
    resp = await os_client.search(index=alias, body={"size": 100, "_source": ["document_id"]})
    docs = sorted(h["_source"]["document_id"] for h in resp["hits"]["hits"])
    assert docs == ["ok:1", "ok:1", "ok:2", "ok:2"]  # nothing of the rejected document
    cur = await admin.execute(
        "SELECT document_id, os_revision = revision FROM documents WHERE tenant_id = %s",
        (tenant,),
    )
    synced = dict(await cur.fetchall())
    assert synced == {"ok:1": True, "ok:2": True, "bad:1": False}  # repair finds it later
    # nor does the dense leg find it: its Postgres chunks went with the lexical copy
    cur = await admin.execute(
        "SELECT document_id, count(*) FROM chunks WHERE tenant_id = %s GROUP BY 1",
        (tenant,),
    )
    assert dict(await cur.fetchall()) == {"ok:1": 3, "ok:2": 3}  # a parent + two children


async def test_a_rejected_new_version_takes_the_older_one_out_of_both_legs(
    stack: Settings, apply, admin, os_client: AsyncOpenSearch, tenant: str
) -> None:
    alias = await _byte_page_index(os_client, stack, tenant)
    v1 = _doc(tenant, "policy:1", 7)
    indexed((await apply([v1]))[0])
    v2 = _doc(tenant, "policy:1", 500, seq=2)
    (err,) = await apply([v2])
    assert isinstance(err, QuarantineError) and err.reason_code == "opensearch_rejected"

    await os_client.indices.refresh(index=alias)
    resp = await os_client.search(index=alias, body={"size": 100})
    assert resp["hits"]["hits"] == []  # the status says quarantined: no leg may find v1
    cur = await admin.execute(
        "SELECT count(*) FROM chunks WHERE tenant_id = %s AND document_id = 'policy:1'", (tenant,)
    )
    assert (await cur.fetchone())[0] == 0
    cur = await admin.execute(
        "SELECT chunk_count FROM documents WHERE tenant_id = %s AND document_id = 'policy:1'",
        (tenant,),
    )
    assert (await cur.fetchone())[0] == 0
