"""Cross-message batching, deduplication, cache use and failure isolation of the
embedder, with a deterministic stand-in model (the real one: integration tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from ragline.embedding.batcher import BatchEmbedder, round_vector
from ragline.embedding.cache import MemoryVectorCache
from ragline.embedding.model import model_revision
from ragline.embedding.texts import embed_text, text_key
from ragline.errors import BackendUnavailable, ConfigError, TransientError
from ragline.events import ChunkLevel, DocEmbedded
from ragline.indexing.samples import enriched_event, pseudo_embedding


class HashModel:
    """Deterministic unit vectors; records every call."""

    name = "hash-model"
    revision = "r1"

    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([pseudo_embedding(t, self.dim) for t in texts], dtype=np.float32)


class BrokenCache(MemoryVectorCache):
    async def get(self, keys):  # type: ignore[no-untyped-def]
        raise BackendUnavailable("postgres down")

    async def put(self, vectors: Mapping[str, np.ndarray]) -> None:
        raise BackendUnavailable("postgres down")


def _events(n: int, children: int = 3, prefix: str = "doc"):
    return [
        enriched_event(
            tenant_id="acme",
            document_id=f"wiki:{prefix}{i}",
            source_seq=1,
            texts=[f"{prefix} {i} paragraph {j}" for j in range(children)],
            title=f"T{i}",
        )
        for i in range(n)
    ]


async def test_one_model_batch_across_many_documents() -> None:
    model = HashModel()
    batcher = BatchEmbedder(model, cache=None, batch_size=64)
    events = _events(10)
    results = await batcher.embed_events(events)
    assert len(model.calls) == 1 and len(model.calls[0]) == 30
    for ev, res in zip(events, results, strict=True):
        assert isinstance(res, DocEmbedded)
        assert res.embedding_model == "hash-model" and res.embedding_dim == 16
        assert res.occurred_at == ev.occurred_at and res.source_seq == ev.source_seq
        for c_in, c_out in zip(ev.chunks, res.chunks, strict=True):
            assert c_out.chunk_id == c_in.chunk_id and c_out.text == c_in.text
            if c_in.level is ChunkLevel.CHILD:
                assert c_out.embedding == pseudo_embedding(embed_text(c_in), 16)
            else:
                assert c_out.embedding is None


async def test_model_batches_are_bounded() -> None:
    model = HashModel()
    batcher = BatchEmbedder(model, cache=None, batch_size=4)
    await batcher.embed_events(_events(2, children=5))
    assert [len(c) for c in model.calls] == [4, 4, 2]


async def test_event_ids_are_deterministic() -> None:
    ev = _events(1)[0]
    a = (await BatchEmbedder(HashModel(), cache=None).embed_events([ev]))[0]
    b = (await BatchEmbedder(HashModel(), cache=None).embed_events([ev]))[0]
    assert isinstance(a, DocEmbedded) and isinstance(b, DocEmbedded)
    assert a.event_id == b.event_id != ev.event_id
    assert a == b


async def test_identical_texts_are_embedded_once() -> None:
    model = HashModel()
    batcher = BatchEmbedder(model, cache=None)
    same = [
        enriched_event(
            tenant_id="acme",
            document_id=f"wiki:{i}",
            source_seq=1,
            texts=["shared paragraph"],
            title="Same",
        )
        for i in range(5)
    ]
    await batcher.embed_events(same)
    assert sum(len(c) for c in model.calls) == 1
    assert batcher.stats.deduplicated == 4


async def test_cache_prevents_re_embedding_unchanged_chunks() -> None:
    model, cache = HashModel(), MemoryVectorCache()
    batcher = BatchEmbedder(model, cache=cache)
    v1 = _events(1, children=4)[0]
    await batcher.embed_events([v1])
    assert batcher.stats.computed == 4
    texts = [c.text for c in v1.chunks if c.level is ChunkLevel.CHILD]
    texts[2] = "an edited paragraph"
    v2 = enriched_event(
        tenant_id="acme", document_id=v1.document_id, source_seq=2, texts=texts, title="T0"
    )
    (res,) = await batcher.embed_events([v2])
    assert isinstance(res, DocEmbedded)
    assert batcher.stats.computed == 5 and batcher.stats.cached == 3
    assert model.calls[-1] == ["T0\nan edited paragraph"]


async def test_broken_cache_degrades_to_computing() -> None:
    model = HashModel()
    batcher = BatchEmbedder(model, cache=BrokenCache())
    results = await batcher.embed_events(_events(2))
    assert all(isinstance(r, DocEmbedded) for r in results)
    assert batcher.stats.computed == 6


async def test_a_misbehaving_model_fails_the_batch_retriably() -> None:
    class WrongDim(HashModel):
        def encode(self, texts: Sequence[str]) -> np.ndarray:
            return np.zeros((len(texts), self.dim + 1), dtype=np.float32)

    results = await BatchEmbedder(WrongDim(), cache=None).embed_events(_events(3))
    assert all(isinstance(r, TransientError) for r in results)


def test_embed_text_and_key() -> None:
    ev = _events(1)[0]
    child = next(c for c in ev.chunks if c.level is ChunkLevel.CHILD)
    assert embed_text(child) == f"T0\n{child.text}"
    assert text_key(embed_text(child)) != text_key(child.text)
    no_header = child.model_copy(update={"enrichment": None})
    assert embed_text(no_header) == child.text


def test_round_vector_keeps_float32_precision() -> None:
    v = np.asarray(pseudo_embedding("x", 384), dtype=np.float32)
    r = np.asarray(round_vector(v), dtype=np.float32)
    assert float(np.max(np.abs(r - v))) < 1e-6


def test_model_revision_hashes_the_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        model_revision(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    a = model_revision(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    b = model_revision(tmp_path)
    assert a != b and len(b) == 16
