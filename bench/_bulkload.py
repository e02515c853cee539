"""Direct bulk load of already-embedded documents into both stores, for the query and
growth benchmarks: Postgres rows shaped like the indexer's (one ``documents`` row, and
per 4 children a parent row, by ``COPY``) with the HNSW index dropped during the load and
built once after it, and the OpenSearch projection through the store's own writer
(``ragline.store.os_bulk.bulk_index`` into the tenant alias made by ``ensure_index``).

Writing through the indexer one document at a time runs at ~60-200 chunks/s on a busy
2-core machine (the growth benchmark's ``--load indexer`` measures that path); a million
chunks that way would take hours, so what these benchmarks measure at scale is the
query side, on a corpus loaded this way. Documents stream in batches: memory stays flat
at any size.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

import numpy as np
from tqdm import tqdm

from ragline.retrieval.ident_match import ident_text
from ragline.store.os_index import IDENT_FIELD

__all__ = ["GROUP", "PER_PARENT", "Doc", "build_hnsw", "drop_hnsw", "load_docs", "rows_of"]

GROUP = "bench"
PER_PARENT = 4  # children per parent chunk
HNSW_INDEX = "chunks_embedding_hnsw"
# the migration's definition (store/migrations/0003_core.sql): pgvector's defaults
HNSW_DDL = f"CREATE INDEX {HNSW_INDEX} ON chunks USING hnsw (embedding vector_cosine_ops)"

# (document id, title, child texts, child vectors: float32 (n, 384), unit length)
Doc = tuple[str, str, list[str], np.ndarray]

_DOC_COLS = (
    "tenant_id, document_id, status, generation, revision, os_revision, acl_groups, title,"
    " source_type, classification, trust, chunk_count"
)
_CHUNK_COLS = (
    "tenant_id, chunk_id, document_id, generation, parent_id, level, ordinal, text,"
    " section_path, content_type, acl_groups, classification, trust, embedding, title,"
    " source_type, token_count"
)


def rows_of(
    tenant: str, doc: Doc, *, vectors: bool = True
) -> tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[str, dict[str, Any]]]]:
    """One document's ``documents`` row, its ``chunks`` rows (parents and children) and
    the OpenSearch documents of its children (only children are indexed there).
    ``vectors`` False writes no embeddings (a lexical-only benchmark: formatting 384
    floats per row is most of the COPY's cost)."""
    from ragline.hashing import chunk_id

    doc_id, title, texts, vecs = doc
    drow = (tenant, doc_id, "indexed", 1, 1, 1, [GROUP], title, tenant)
    drow += ("internal", "medium", len(texts))
    crows: list[tuple[Any, ...]] = []
    os_docs: list[tuple[str, dict[str, Any]]] = []
    ordinal = 0
    for start in range(0, len(texts), PER_PARENT):
        pid = chunk_id(doc_id, "bench", "p", start)
        group = texts[start : start + PER_PARENT]
        crows.append(
            (
                tenant,
                pid,
                doc_id,
                1,
                None,
                "parent",
                ordinal,
                "\n\n".join(group),
                [title],
                "text",
                [GROUP],
                "internal",
                "medium",
                None,
                title,
                tenant,
                0,
            )
        )
        ordinal += 1
        for j in range(start, start + len(group)):
            cid = chunk_id(doc_id, "bench", "c", j)
            n_tokens = len(texts[j].split())
            crows.append(
                (
                    tenant,
                    cid,
                    doc_id,
                    1,
                    pid,
                    "child",
                    ordinal,
                    texts[j],
                    [title],
                    "text",
                    [GROUP],
                    "internal",
                    "medium",
                    vecs[j] if vectors else None,
                    title,
                    tenant,
                    n_tokens,
                )
            )
            os_docs.append(
                (
                    cid,
                    {
                        "chunk_id": cid,
                        "tenant_id": tenant,
                        "document_id": doc_id,
                        "parent_id": pid,
                        "generation": 1,
                        "revision": 1,
                        "ordinal": ordinal,
                        "text": texts[j],
                        "title": title,
                        "section_path": [title],
                        "content_type": "text",
                        "source_type": tenant,
                        "acl_groups": [GROUP],
                        "classification": "internal",
                        "trust": "medium",
                        "superseded": False,
                        "injection_suspect": False,
                        "token_count": n_tokens,
                        # as the indexer writes it (chunks.ident_text, projection.os_source)
                        IDENT_FIELD: ident_text(title, None, texts[j]),
                    },
                )
            )
            ordinal += 1
    return drow, crows, os_docs


def _batches(docs: Iterable[Doc], n: int) -> Iterator[list[Doc]]:
    it = iter(docs)
    while batch := list(islice(it, n)):
        yield batch


def _copy(conn: Any, drows: list[tuple[Any, ...]], crows: list[tuple[Any, ...]]) -> float:
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        with cur.copy(f"COPY documents ({_DOC_COLS}) FROM STDIN") as cp:
            for r in drows:
                cp.write_row(r)
        with cur.copy(f"COPY chunks ({_CHUNK_COLS}) FROM STDIN") as cp:
            for r in crows:
                cp.write_row(r)
    conn.commit()
    return time.perf_counter() - t0


async def _timed(aw: Any) -> float:
    t0 = time.perf_counter()
    await aw
    return time.perf_counter() - t0


# OpenSearch's own advice for a bulk load, undone after it: no refresh per second, the
# translog fsynced in the background rather than per request
_BULK_SETTINGS = {"refresh_interval": "-1", "translog.durability": "async"}


async def load_docs(
    settings: Any,
    tenant: str,
    docs: Iterable[Doc],
    *,
    total_chunks: int | None = None,
    batch_docs: int = 500,
    os_batch: int = 2000,
    label: str = "",
    vectors: bool = True,
) -> dict[str, Any]:
    """Stream ``docs`` into Postgres (COPY, committed per batch, in a thread) and
    OpenSearch (bulk, concurrently with the COPY of the same batch; refresh off during
    the load, one refresh at the end); the caller drops/builds the HNSW index
    (``build_hnsw``). Each store's own time is measured, and the wall time; building
    the rows is counted in neither store."""
    import asyncio

    import psycopg
    from pgvector.psycopg import register_vector

    from ragline.store.os_bulk import bulk_index
    from ragline.store.os_client import make_client
    from ragline.store.os_index import chunk_mapping, ensure_index, index_name

    pg_s = os_s = 0.0
    n_docs = n_chunks = 0
    wall0 = time.perf_counter()
    client = make_client(settings, timeout_s=300)
    name = index_name(settings.opensearch_index_prefix, tenant)
    restore = {
        "refresh_interval": chunk_mapping()["settings"]["refresh_interval"],
        "translog.durability": "request",
    }
    try:
        await ensure_index(client, name)
        await client.indices.put_settings(index=name, body={"index": _BULK_SETTINGS})
        with (
            psycopg.connect(settings.admin_dsn()) as conn,
            tqdm(total=total_chunks, desc=f"load {label}".strip(), unit="chunk") as bar,
        ):
            register_vector(conn)
            for batch in _batches(docs, batch_docs):
                drows, crows, os_docs = [], [], []
                for d in batch:
                    dr, cr, od = rows_of(tenant, d, vectors=vectors)
                    drows.append(dr)
                    crows.extend(cr)
                    os_docs.extend(od)
                pg_t, os_t = await asyncio.gather(
                    asyncio.to_thread(_copy, conn, drows, crows),
                    _timed(bulk_index(client, name, os_docs, refresh="false", batch_size=os_batch)),
                )
                pg_s += pg_t
                os_s += os_t
                n_docs += len(batch)
                n_chunks += len(os_docs)
                bar.update(len(os_docs))
                bar.set_postfix(pg_cps=f"{n_chunks / pg_s:.0f}", os_cps=f"{n_chunks / os_s:.0f}")
        t3 = time.perf_counter()
        await client.indices.put_settings(index=name, body={"index": restore})
        await client.indices.refresh(index=name)
        os_s += time.perf_counter() - t3
    finally:
        await client.close()
    wall = time.perf_counter() - wall0
    return {
        "documents": n_docs,
        "chunks": n_chunks,
        "wall_s": round(wall, 1),
        "chunks_per_s": round(n_chunks / wall, 1) if wall else None,
        "pg_copy_s": round(pg_s, 1),
        "pg_copy_chunks_per_s": round(n_chunks / pg_s, 1) if pg_s else None,
        "opensearch_bulk_s": round(os_s, 1),
        "opensearch_bulk_chunks_per_s": round(n_chunks / os_s, 1) if os_s else None,
    }


def drop_hnsw(settings: Any) -> None:
    import psycopg

    with psycopg.connect(settings.admin_dsn(), autocommit=True) as conn:
        conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")


def build_hnsw(settings: Any, maintenance_work_mem: str = "1GB") -> dict[str, Any]:
    """(Re)build the HNSW index over every child vector in one pass, then ANALYZE."""
    import psycopg

    with psycopg.connect(settings.admin_dsn(), autocommit=True) as conn:
        conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
        conn.execute(f"SET maintenance_work_mem = '{maintenance_work_mem}'")
        t0 = time.perf_counter()
        conn.execute(HNSW_DDL)
        hnsw_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        conn.execute("ANALYZE documents")
        conn.execute("ANALYZE chunks")
        analyze_s = time.perf_counter() - t1
    return {"hnsw_build_s": round(hnsw_s, 1), "analyze_s": round(analyze_s, 1)}
