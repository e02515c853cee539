"""The dual write of a space that embeds another text (recipe ``plain``): the embedder
stage puts the model's vectors of that text in the embedding cache before it returns
``doc.embedded``, and the indexer writes them to the space in the chunk transaction; a
change of the document replaces them, with no backfill at any point."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.stage import EmbedderStage
from ragline.events import DocEmbedded
from ragline.hashing import sha256_hex
from ragline.indexing.samples import enriched_event
from ragline.indexing.writer import IndexWriter
from ragline.platform.stack.testing import unique_tenant
from ragline.runtime.stage import StageContext
from ragline.store.spaces import SPACE_VECTORS_MISSING, count_progress, create_space

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _missing(name: str) -> float:
    return SPACE_VECTORS_MISSING.labels(name)._value.get()


async def test_embedder_feeds_and_indexer_writes_another_recipe(install, pool, model):
    async with pool.connection() as conn:
        space = await create_space(
            conn,
            name="plain-dw",
            model=model.name,
            revision=model.revision,
            dim=model.dim,
            truncate_dim=None,
            normalize=True,
            recipe="plain",
            actor="test",
        )
    stage = EmbedderStage(install, EmbedderSettings(), embedder=model)
    await stage.start()
    ctx = StageContext(settings=install, logger=logging.getLogger("test.spaces"))
    writer = IndexWriter(consumer="spaces-tests")
    tenant = unique_tenant("dw")
    before = _missing("plain-dw")
    try:
        for seq, words in ((1, "first"), (2, "second")):  # a new document, then a change
            ev = enriched_event(
                tenant_id=tenant,
                document_id="doc:dw",
                source_seq=seq,
                texts=[f"the {words} version of part {i} of the handbook" for i in range(5)],
                title="Handbook",
            )
            (out,) = await stage.handle_batch([ev], ctx)
            assert not isinstance(out, BaseException)
            embedded = out[0].event
            assert isinstance(embedded, DocEmbedded)
            async with pool.connection() as conn:
                await writer.apply(conn, embedded)
                assert await count_progress(conn, space) == (5, 5)
                cur = await conn.execute(
                    "SELECT c.text, v.text_hash, v.embedding FROM space_vectors v"
                    " JOIN chunks c USING (tenant_id, chunk_id) WHERE v.space_id = %s",
                    (space.space_id,),
                )
                rows = await cur.fetchall()
                await conn.commit()
            assert {t for t, _, _ in rows} == {
                f"the {words} version of part {i} of the handbook" for i in range(5)
            }
            for text, h, vec in rows:
                assert h == sha256_hex(text)  # the plain text, not header + text
                want = model.encode([text])[0]
                assert float(np.dot(np.asarray(vec.to_numpy()), want)) > 0.999
    finally:
        await stage.stop()
    assert _missing("plain-dw") == before
