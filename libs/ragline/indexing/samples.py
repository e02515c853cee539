"""Sample pipeline events built from plain texts, for benchmarks and tests of the embedder
and the indexer alone (the chunker/enricher are exercised by their own suites).

``pseudo_embedding`` is a deterministic hash-seeded unit vector: it lets the indexer be
measured and tested without the model; it is never used by a service.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

import numpy as np

from ragline.events import (
    AclChange,
    Chunk,
    ChunkLevel,
    Classification,
    DocControl,
    DocEmbedded,
    DocEnriched,
    DocumentMeta,
    Enrichment,
    meta_seal_input,
)
from ragline.hashing import chunk_id, sha256_hex
from ragline.scan_seal import digest

__all__ = [
    "SAMPLE_STRATEGY",
    "PseudoEmbedder",
    "acl_event",
    "as_embedded",
    "embedded_event",
    "enriched_event",
    "pseudo_embedding",
]

SAMPLE_STRATEGY = "sample-v1"
_CHILDREN_PER_PARENT = 4


def pseudo_embedding(text: str, dim: int = 384) -> tuple[float, ...]:
    seed = int(sha256_hex(text)[:16], 16)
    v = np.random.default_rng(seed).standard_normal(dim)
    v /= np.linalg.norm(v)
    return tuple(round(float(x), 7) for x in v)


class PseudoEmbedder:
    """An embedder of ``pseudo_embedding`` vectors (the embedder stage's interface): the
    pipeline's contract and the indexer's work, without the model."""

    name = "pseudo"
    revision = "0"
    dim = 384

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([pseudo_embedding(t) for t in texts], dtype=np.float32)


def _chunks(
    document_id: str, content_hash: str, texts: Sequence[str], title: str | None
) -> list[Chunk]:
    header = f"{title or document_id}"
    out: list[Chunk] = []
    ordinal = 0
    for start in range(0, len(texts), _CHILDREN_PER_PARENT):
        group = texts[start : start + _CHILDREN_PER_PARENT]
        parent_id = chunk_id(document_id, content_hash, SAMPLE_STRATEGY, "p", start)
        enrichment = Enrichment(language="en", content_type="text", contextual_header=header)
        out.append(
            Chunk(
                chunk_id=parent_id,
                level=ChunkLevel.PARENT,
                ordinal=ordinal,
                text="\n\n".join(group),
                section_path=(header,),
                content_type="text",
                token_count=sum(len(t.split()) for t in group),
                strategy=SAMPLE_STRATEGY,
                strategy_version="1",
                enrichment=enrichment,
            )
        )
        ordinal += 1
        for j, text in enumerate(group):
            out.append(
                Chunk(
                    chunk_id=chunk_id(document_id, content_hash, SAMPLE_STRATEGY, "c", start + j),
                    parent_id=parent_id,
                    level=ChunkLevel.CHILD,
                    ordinal=ordinal,
                    text=text,
                    section_path=(header,),
                    content_type="text",
                    token_count=len(text.split()),
                    strategy=SAMPLE_STRATEGY,
                    strategy_version="1",
                    enrichment=enrichment,
                )
            )
            ordinal += 1
    return out


def enriched_event(
    *,
    tenant_id: str,
    document_id: str,
    source_seq: int,
    texts: Sequence[str],
    title: str | None = None,
    acl_groups: Sequence[str] = ("everyone",),
    classification: Classification = Classification.INTERNAL,
    version: str | None = None,
    series_id: str | None = None,
    supersedes: Sequence[str] = (),
    effective_date: date | None = None,
    expiry_date: date | None = None,
    event_id: str | None = None,
) -> DocEnriched:
    """A doc.enriched whose children are ``texts`` (a parent per 4 children)."""
    content_hash = sha256_hex("\x1e".join(texts))
    meta = DocumentMeta(
        title=title,
        acl_groups=tuple(acl_groups),
        classification=classification,
        version=version,
        series_id=series_id,
        supersedes=tuple(supersedes),
        effective_date=effective_date,
        expiry_date=expiry_date,
        language="en",
    )
    # generated text only, as if scanned: the one sanctioned seal outside the scanner
    # (import-linter contract scan-seal ignores this module), for tests and benchmarks
    meta = meta.model_copy(update={"scan_seal": digest("meta", meta_seal_input(meta))})
    extra: dict[str, Any] = {"event_id": event_id} if event_id else {}
    return DocEnriched(
        tenant_id=tenant_id,
        document_id=document_id,
        source_seq=source_seq,
        content_hash=content_hash,
        meta=meta,
        chunks=tuple(_chunks(document_id, content_hash, texts, title)),
        **extra,
    )


def embedded_event(*, dim: int = 384, **kwargs: Any) -> DocEmbedded:
    """The doc.embedded of ``enriched_event(**kwargs)`` with pseudo embeddings."""
    ev = enriched_event(**kwargs)
    vectors = [
        pseudo_embedding(c.text, dim) if c.level is ChunkLevel.CHILD else None for c in ev.chunks
    ]
    return as_embedded(ev, vectors, model="pseudo", revision="0", dim=dim)


def as_embedded(
    ev: DocEnriched,
    vectors: Sequence[tuple[float, ...] | None],
    *,
    model: str,
    revision: str,
    dim: int,
) -> DocEmbedded:
    """``ev`` as a doc.embedded: chunk ``i`` gets ``vectors[i]`` (None: kept as it is)."""
    chunks = tuple(
        c if v is None else c.model_copy(update={"embedding": v})
        for c, v in zip(ev.chunks, vectors, strict=True)
    )
    data = ev.model_dump(exclude={"event_type", "chunks"})
    return DocEmbedded.model_validate(
        {
            **data,
            "chunks": chunks,
            "embedding_model": model,
            "embedding_revision": revision,
            "embedding_dim": dim,
        }
    )


def acl_event(tenant: str, doc: str, seq: int, *groups: str) -> DocControl:
    """An ACL change of ``doc`` to ``groups`` at ``seq``."""
    return DocControl(
        tenant_id=tenant,
        document_id=doc,
        source_seq=seq,
        action="acl",
        acl=AclChange(acl_groups=groups),
    )
