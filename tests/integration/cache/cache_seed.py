"""Documents for the cache tests, written the way the indexer writes them (``IndexWriter``
on DocEmbedded / DocControl events), with deterministic pseudo-random unit vectors; and
the ``doc.indexed`` event the indexer would emit for each change."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.events import (
    AclChange,
    Chunk,
    ChunkLevel,
    DocControl,
    DocEmbedded,
    DocIndexed,
    DocumentMeta,
    Enrichment,
    EventBase,
)
from ragline.hashing import chunk_id, sha256_hex
from ragline.indexing.outcome import indexed_event
from ragline.indexing.writer import IndexWriter
from ragline.retrieval.api_models import (
    Citation,
    Flags,
    Result,
    Scores,
    SearchResponse,
    VersionScope,
)
from ragline.retrieval.cache_seam import CacheKey
from ragline.scanning.seal import as_scanned

DIM = 384


def unit(seed: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    rng = np.random.default_rng(int(sha256_hex(seed)[:12], 16))
    v = rng.normal(size=DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def near(v: np.ndarray[Any, np.dtype[np.float32]], cos: float, seed: str = "n") -> Any:
    """A unit vector at cosine ``cos`` from unit vector ``v``."""
    w = unit(seed)
    w = w - float(w @ v) * v
    w = w / np.linalg.norm(w)
    out = cos * v + np.sqrt(1 - cos * cos) * w
    return out.astype(np.float32)


def chunk_ids(document_id: str, texts: Sequence[str]) -> list[str]:
    h = sha256_hex("\x1e".join(texts))
    return [chunk_id(document_id, h, "ctest", "c", i) for i in range(len(texts))]


def embedded(
    tenant: str,
    document_id: str,
    texts: Sequence[str],
    groups: Sequence[str],
    seq: int,
    supersedes: Sequence[str] = (),
) -> DocEmbedded:
    h = sha256_hex("\x1e".join(texts))
    enr = Enrichment(language="en", content_type="text", contextual_header=document_id)
    ids = chunk_ids(document_id, texts)
    chunks = tuple(
        Chunk(
            chunk_id=cid,
            level=ChunkLevel.CHILD,
            ordinal=i,
            text=t,
            section_path=(document_id,),
            content_type="text",
            token_count=len(t.split()),
            strategy="ctest",
            strategy_version="1",
            enrichment=enr,
            embedding=tuple(float(x) for x in unit(t)),
        )
        for i, (cid, t) in enumerate(zip(ids, texts, strict=True))
    )
    return as_scanned(
        DocEmbedded(
            tenant_id=tenant,
            document_id=document_id,
            source_seq=seq,
            content_hash=h,
            meta=DocumentMeta(
                title=document_id,
                acl_groups=tuple(groups),
                language="en",
                supersedes=tuple(supersedes),
            ),
            chunks=chunks,
            embedding_model="all-MiniLM-L6-v2",
            embedding_revision="test",
            embedding_dim=DIM,
        )
    )


async def _apply(pool: AsyncConnectionPool, ev: DocEmbedded | DocControl) -> DocIndexed:
    writer = IndexWriter(consumer="cache-tests")
    async with pool.connection() as conn:
        outcome = await writer.apply(conn, ev)
    assert outcome is not None
    src: EventBase = ev
    return indexed_event(src, outcome, source_event_at=datetime.now(UTC))


async def upsert(
    pool: AsyncConnectionPool,
    tenant: str,
    document_id: str,
    texts: Sequence[str],
    groups: Sequence[str],
    seq: int,
    supersedes: Sequence[str] = (),
) -> DocIndexed:
    return await _apply(pool, embedded(tenant, document_id, texts, groups, seq, supersedes))


async def delete(pool: AsyncConnectionPool, tenant: str, document_id: str, seq: int) -> DocIndexed:
    ev = DocControl(tenant_id=tenant, document_id=document_id, source_seq=seq, action="delete")
    return await _apply(pool, ev)


async def set_acl(
    pool: AsyncConnectionPool, tenant: str, document_id: str, groups: Sequence[str], seq: int
) -> DocIndexed:
    ev = DocControl(
        tenant_id=tenant,
        document_id=document_id,
        source_seq=seq,
        action="acl",
        acl=AclChange(acl_groups=tuple(groups)),
    )
    return await _apply(pool, ev)


def response(hits: Sequence[tuple[str, str]]) -> SearchResponse:
    """A search response citing (document_id, chunk_id) pairs."""
    return SearchResponse(
        results=[
            Result(
                chunk_id=c,
                document_id=d,
                text=f"evidence from {d}",
                scores=Scores(rrf=1.0 / (60 + i)),
                citation=Citation(title=d),
                flags=Flags(),
            )
            for i, (d, c) in enumerate(hits)
        ],
        abstained=False,
        version_scope=VersionScope(mode="current", note="current versions"),
        timings_ms={"total": 40.0},
        cache="miss",
        trace_id="t",
    )


def cache_key(
    tenant: str,
    groups: Sequence[str],
    query: str,
    vector: Any | None = None,
    *,
    mode: str = "hybrid",
    **request: Any,
) -> CacheKey:
    req: dict[str, Any] = {"mode": mode, "top_k": 5, "filters": None}
    req.update(request)
    vec = vector if vector is not None else unit(query)
    return CacheKey(
        principal=Principal(tenant=tenant, groups=tuple(groups), subject="tester"),
        queries=(query,),
        vectors=() if mode == "lexical" else (vec,),
        request=req,
    )
