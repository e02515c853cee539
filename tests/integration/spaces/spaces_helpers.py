"""Seeding the spaces tests' installs the way the indexer writes (IndexWriter)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from psycopg_pool import AsyncConnectionPool

from ragline.embedding.batcher import round_vector
from ragline.embedding.model import Embedder
from ragline.embedding.texts import embed_text
from ragline.events import ChunkLevel, DocEmbedded
from ragline.indexing.samples import embedded_event, enriched_event
from ragline.indexing.writer import IndexWriter

_REPO = Path(__file__).resolve().parents[3]
# SciFact: RAGLINE_SCIFACT_DIR, or the shared data dir next to the checkout (or next to
# the worktrees' parent)
SCIFACT = next(
    (
        p
        for p in (
            Path(os.environ.get("RAGLINE_SCIFACT_DIR", "/nonexistent")),
            _REPO.parent / "shared" / "eval" / "scifact",
            _REPO.parent.parent / "shared" / "eval" / "scifact",
        )
        if (p / "corpus.jsonl").is_file()
    ),
    _REPO.parent / "shared" / "eval" / "scifact",
)

TOPICS = (
    "invoices are paid within thirty days of receipt",
    "the gateway rejects tokens older than one hour",
    "parental leave is sixteen weeks for every employee",
    "backups run nightly and are kept for ninety days",
    "the on-call engineer acknowledges pages within five minutes",
    "travel must be booked through the approved agency",
    "passwords rotate every ninety days for service accounts",
    "the data warehouse refreshes at two in the morning",
)


def texts(doc: int, n: int) -> list[str]:
    return [f"{TOPICS[(doc + i) % len(TOPICS)]} (document {doc}, part {i})" for i in range(n)]


async def seed(
    pool: AsyncConnectionPool,
    tenant: str,
    docs: int,
    children: int,
    *,
    groups: Sequence[str] = ("everyone",),
) -> list[str]:
    writer = IndexWriter(consumer="spaces-tests")
    ids = []
    async with pool.connection() as conn:
        for d in range(docs):
            doc_id = f"doc:{d}"
            ev = embedded_event(
                tenant_id=tenant,
                document_id=doc_id,
                source_seq=1,
                texts=texts(d, children),
                title=f"Handbook {d}",
                acl_groups=tuple(groups),
            )
            await writer.apply(conn, ev)
            ids.append(doc_id)
    return ids


async def seed_real(
    pool: AsyncConnectionPool,
    embedder: Embedder,
    tenant: str,
    docs: int,
    children: int,
    *,
    groups: Sequence[str] = ("everyone",),
) -> list[str]:
    """Like ``seed`` with the real model's vectors (``seed_docs``)."""
    spec = [(f"doc:{d}", f"Handbook {d}", texts(d, children)) for d in range(docs)]
    await seed_docs(pool, embedder, tenant, spec, groups=groups)
    return [d for d, _, _ in spec]


async def seed_docs(
    pool: AsyncConnectionPool,
    embedder: Embedder,
    tenant: str,
    docs: Sequence[tuple[str, str, Sequence[str]]],
    *,
    groups: Sequence[str] = ("everyone",),
) -> None:
    """(document id, title, child texts) written by ``IndexWriter`` with the real model's
    vectors of the event path's text, recorded under the model's own name and revision
    (as the embedder stage does)."""
    writer = IndexWriter(consumer="spaces-tests")
    async with pool.connection() as conn:
        for doc_id, title, kids_text in docs:
            ev = enriched_event(
                tenant_id=tenant,
                document_id=doc_id,
                source_seq=1,
                texts=list(kids_text),
                title=title,
                acl_groups=tuple(groups),
            )
            kids = [c for c in ev.chunks if c.level is ChunkLevel.CHILD]
            vecs = embedder.encode([embed_text(c) for c in kids])
            by_id = {c.chunk_id: v for c, v in zip(kids, vecs, strict=True)}
            chunks = tuple(
                c.model_copy(update={"embedding": round_vector(by_id[c.chunk_id])})
                if c.chunk_id in by_id
                else c
                for c in ev.chunks
            )
            out = DocEmbedded.model_validate(
                {
                    **ev.model_dump(exclude={"event_type", "chunks"}),
                    "chunks": chunks,
                    "embedding_model": embedder.name,
                    "embedding_revision": embedder.revision,
                    "embedding_dim": embedder.dim,
                }
            )
            await writer.apply(conn, out)


def scifact_subset(src: Path, dst: Path, *, queries: int, distractors: int) -> list[dict]:
    """A small BEIR directory from SciFact's train split: ``queries`` judged queries,
    their relevant abstracts and ``distractors`` unjudged ones. Returns the corpus rows."""
    qrels: dict[str, list[str]] = {}
    with (src / "qrels" / "train.tsv").open() as fh:
        for line in fh:
            parts = line.strip().split("\t")
            if len(parts) >= 3 and parts[0] != "query-id" and int(float(parts[2])) > 0:
                qrels.setdefault(parts[0], []).append(parts[1])
    qrows = [json.loads(x) for x in (src / "queries.jsonl").open()]
    picked = [q for q in qrows if str(q["_id"]) in qrels][:queries]
    relevant = {d for q in picked for d in qrels[str(q["_id"])]}
    corpus, extra = [], 0
    for line in (src / "corpus.jsonl").open():
        row = json.loads(line)
        if str(row["_id"]) in relevant:
            corpus.append(row)
        elif extra < distractors:
            corpus.append(row)
            extra += 1
    (dst / "qrels").mkdir(parents=True, exist_ok=True)
    with (dst / "corpus.jsonl").open("w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in corpus)
    with (dst / "queries.jsonl").open("w") as fh:
        fh.writelines(json.dumps(q) + "\n" for q in picked)
    with (dst / "qrels" / "test.tsv").open("w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q in picked:
            fh.writelines(f"{q['_id']}\t{d}\t1\n" for d in qrels[str(q["_id"])])
    return corpus


def pack(text: str, words: int = 90) -> list[str]:
    """Sentence-packed children of at most ``words`` words (the benches' packing)."""
    out: list[str] = []
    cur: list[str] = []
    for sentence in text.replace("\n", " ").split(". "):
        w = sentence.split()
        if cur and len(cur) + len(w) > words:
            out.append(" ".join(cur))
            cur = []
        cur.extend(w)
    if cur:
        out.append(" ".join(cur))
    return [c for c in out if c.strip()] or [text.strip() or "(empty)"]
