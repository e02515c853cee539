"""A document embedded in slices (embedding/stage.py) is never partly visible: while its
new version goes through the embedder slice by slice (each pass handed on, as the runner
publishes it to doc.enriched.bulk) and then the indexer, a reader under row-level
security sees the old version whole or the new one whole, never a mix or a part."""

from __future__ import annotations

import asyncio
import logging
import uuid

import psycopg
import pytest
import pytest_asyncio

from ragline.embedding.model import load_embedder
from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.stage import EmbedderStage
from ragline.events import DocEmbedded, DocEnriched, Topics
from ragline.indexing.samples import enriched_event
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.runtime.stage import StageContext
from ragline.store.rls import scoped_transaction

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

SLICE = 8

# what a query may see of one document: the retrieval's own visibility predicates
# (retrieval/hydrate.py: the document indexed, the chunk of its current generation)
_VISIBLE = (
    "SELECT c.text FROM chunks c JOIN documents d"
    " ON d.tenant_id = c.tenant_id AND d.document_id = c.document_id"
    " WHERE c.tenant_id = %s AND c.document_id = %s AND c.level = 'child'"
    " AND d.status = 'indexed' AND c.generation = d.generation"
)


@pytest_asyncio.fixture(loop_scope="session")
async def stages(stack):
    cfg = EmbedderSettings(slice_texts=SLICE)
    model = await asyncio.to_thread(load_embedder, cfg)
    embedder = EmbedderStage(stack, cfg, embedder=model)
    indexer = IndexerStage(stack, IndexerSettings())
    await embedder.start()
    await indexer.start()
    yield embedder, indexer
    await indexer.stop()
    await embedder.stop()


def _ctx(stack) -> StageContext:
    return StageContext(settings=stack, logger=logging.getLogger("test.slices"))


async def _through(stack, embedder, indexer, event, passes: list[int]) -> None:
    """The runner's part: hand the embedder's continuations back to it until the document
    is complete, then give its doc.embedded to the indexer."""
    while True:
        (res,) = await embedder.handle_batch([event], _ctx(stack))
        assert not isinstance(res, BaseException), res
        (out,) = res
        passes.append(1)
        if out.topic == Topics.DOC_ENRICHED:
            assert isinstance(out.event, DocEnriched)
            event = out.event
            await asyncio.sleep(0.05)  # a slow ingest: the reader looks in between
            continue
        assert out.topic == Topics.DOC_EMBEDDED and isinstance(out.event, DocEmbedded)
        (done,) = await indexer.handle_batch([out.event], _ctx(stack))
        assert not isinstance(done, BaseException), done
        return


async def test_a_sliced_document_becomes_visible_all_at_once(stack, stages, tenant):
    embedder, indexer = stages
    tag = uuid.uuid4().hex[:6]
    doc = "wiki:handbook"
    old = [f"v1 {tag} handbook section {i} on travel rules." for i in range(5)]
    new = [f"v2 {tag} handbook chapter {i} on expense claims." for i in range(5 * SLICE)]
    await _through(
        stack,
        embedder,
        indexer,
        enriched_event(tenant_id=tenant, document_id=doc, source_seq=1, texts=old),
        [],
    )
    seen: list[tuple[int, frozenset[str]]] = []  # (embedder passes so far, texts seen)
    passes: list[int] = []
    stop = asyncio.Event()

    async def reader() -> None:
        async with await psycopg.AsyncConnection.connect(stack.query_dsn()) as conn:
            while not stop.is_set():
                async with scoped_transaction(conn, tenant_id=tenant, groups=["everyone"]):
                    cur = await conn.execute(_VISIBLE, (tenant, doc))
                    rows = await cur.fetchall()
                seen.append((len(passes), frozenset(str(r[0]) for r in rows)))
                await asyncio.sleep(0.01)

    looking = asyncio.create_task(reader())
    try:
        await _through(
            stack,
            embedder,
            indexer,
            enriched_event(tenant_id=tenant, document_id=doc, source_seq=2, texts=new),
            passes,
        )
        await asyncio.sleep(0.1)
    finally:
        stop.set()
        await looking
    whole_old, whole_new = frozenset(old), frozenset(new)
    partial = [(n, len(s)) for n, s in seen if s not in (whole_old, whole_new)]
    assert not partial, f"a query saw part of a document: {partial[:5]}"
    # the reader looked while slices were still outstanding, and saw the new one in the end
    assert any(0 < n < len(passes) for n, _ in seen)
    assert seen[-1][1] == whole_new
    assert len(passes) == len(new) // SLICE  # sliced: 4 passes handed on, the 5th complete
