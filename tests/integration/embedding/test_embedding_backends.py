"""The embedder stage on the int8 ONNX backend (exported offline into the default export
directory, once per machine) against the real stack: its own revision in the records and
in the Postgres cache, unit vectors that keep meaning, and the backend in the metrics."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest
from prometheus_client import REGISTRY

from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.stage import EmbedderStage
from ragline.events import ChunkLevel
from ragline.indexing.samples import enriched_event
from ragline.runtime.stage import StageContext

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def test_int8_stage_records_its_own_revision_and_caches_under_it(stack, tenant):
    stage = EmbedderStage(stack, EmbedderSettings(backend="onnx-int8"))
    await stage.start()
    try:
        ev = enriched_event(
            tenant_id=tenant,
            document_id="wiki:int8",
            source_seq=1,
            texts=[
                "Cats are small domesticated felines that purr.",
                "Kittens are young cats and love to play.",
                "The quarterly tax filing deadline is in April.",
            ],
            title="Animals and taxes",
        )
        ctx = StageContext(settings=stack, logger=logging.getLogger("test.embedder.int8"))
        ((out,),) = await stage.handle_batch([ev], ctx)
        doc = out.event
        # the weights' revision + the artifact's checksum (issue 34)
        assert re.fullmatch(r"[0-9a-f]{16}\+int8\.[0-9a-f]{16}", doc.embedding_revision)
        assert doc.embedding_dim == 384
        vecs = np.asarray(
            [c.embedding for c in doc.chunks if c.level is ChunkLevel.CHILD], dtype=np.float32
        )
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
        sims = vecs @ vecs.T
        assert sims[0, 1] > sims[0, 2] + 0.1
        info = REGISTRY.get_sample_value("ragline_embedding_backend_info", {"backend": "onnx-int8"})
        assert info == 1.0
        assert stage.batcher.cache is not None
        assert stage.batcher.cache.revision == doc.embedding_revision  # type: ignore[attr-defined]
    finally:
        await stage.stop()


async def test_embedder_service_does_not_start_on_a_tampered_artifact(service_process, tmp_path):
    """Issue 34: the artifact's SHA-256 is checked at load; a tampered file stops the
    service at start with the file and the checksum it must have, before any consuming."""
    from pathlib import Path

    from ragline.embedding.model import default_model_path, model_revision
    from ragline.embedding.onnx_backend import onnx_artifact

    model = Path(default_model_path())
    art = onnx_artifact(
        model, tmp_path, model_revision(model), variant="int8-dynamic"
    )  # the onnx-int8 default
    data = bytearray(art.path.read_bytes())
    data[len(data) // 2] ^= 0x01
    art.path.write_bytes(bytes(data))
    proc = service_process(
        "embedder",
        env={"RAGLINE_EMBEDDER_ONNX_DIR": str(tmp_path), "RAGLINE_EMBEDDER_BACKEND": "onnx-int8"},
    )
    proc.proc.wait(timeout=180)
    log = proc.log()
    assert proc.returncode not in (None, 0), log[-2000:]
    assert str(art.path) in log and f"expected {art.sha256}" in log, log[-2000:]
