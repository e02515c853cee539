"""One filtered sub-search: dense and BM25 concurrently, RRF, the RLS re-read, rerank.

Runs inside one RLS transaction for the Postgres parts (dense + re-read share it);
OpenSearch runs concurrently with the dense query. An OpenSearch failure degrades the
search to dense-only instead of failing it (unless the search is lexical-only).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.errors import BackendUnavailable, PermanentError, TransientError
from ragline.retrieval.abstain import identifiers
from ragline.retrieval.dense import DenseHit, dense_search
from ragline.retrieval.filters import Predicate
from ragline.retrieval.fusion import (
    FusedHit,
    cosine_weight,
    coverage_weight,
    evidence_weight,
    lexical_evidence,
    rrf,
    score_fusion,
)
from ragline.retrieval.hydrate import ChunkRow, hydrate
from ragline.retrieval.ident_match import matches_any
from ragline.retrieval.lexical import LexicalHit, LexicalSearcher
from ragline.retrieval.rerank import Reranker, RerankFailed
from ragline.retrieval.scope import rls_transaction
from ragline.retrieval.settings import QuerySettings, RankingSettings
from ragline.retrieval.term_evidence import TermStats, asked_about
from ragline.retrieval.timing import Timings
from ragline.store.space_model import Space

__all__ = [
    "Candidate",
    "SubSearchResult",
    "exact_refuse",
    "fuse",
    "rerank_candidates",
    "resolve_series",
    "retrieve",
]

_log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class Candidate:
    row: ChunkRow
    rrf: float
    dense_rank: int | None = None
    bm25_rank: int | None = None
    bm25_score: float | None = None
    rerank: float | None = None
    query_index: int = 0
    label: str | None = None


# the query's words in the caller's corpus (term_stats.QueryTermFrequency.read without the
# principal): (query text, the leg's predicates, the best BM25 hit's chunk id when known)
TermReader = Callable[
    [str, Sequence[Predicate], Awaitable[str | None]], Coroutine[Any, Any, TermStats | None]
]


@dataclass(kw_only=True)
class SubSearchResult:
    candidates: list[Candidate]
    degraded: list[str] = field(default_factory=list)


async def _lexical(
    searcher: LexicalSearcher | None,
    principal: Principal,
    text: str,
    preds: Sequence[Predicate],
    *,
    limit: int,
    timeout_s: float,
    timings: Timings,
    with_count: bool,
    terms: TermReader | None = None,
) -> tuple[list[LexicalHit] | None, int | None, float | None]:
    """BM25 hits (None when OpenSearch is unavailable), ``with_count`` the index's chunk
    count (the unit of the fusion's lexical evidence; None when unknown or not asked),
    read concurrently, and with ``terms`` the best hit's coverage of the query
    (``TermStats.top_coverage_present``: None when unknown or there is no hit), the
    fusion's coverage weighting. The query's analysis for it runs beside the BM25 search;
    only the counts wait for the best hit."""
    if searcher is None:
        return None, None, None
    with timings.stage("lexical"):
        count = (
            asyncio.create_task(searcher.chunk_count(principal, timeout_s=timeout_s))
            if with_count
            else None
        )
        best: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        reading = (
            asyncio.create_task(terms(asked_about(text), preds, best))
            if terms is not None
            else None
        )
        try:
            try:
                hits = await searcher.search(
                    principal, text, preds, limit=limit, timeout_s=timeout_s
                )
            except (TransientError, PermanentError) as exc:
                _log.warning(
                    "lexical search failed", extra={"fields": {"error": type(exc).__name__}}
                )
                if count is not None:
                    count.cancel()
                return None, None, None
            coverage = None
            if reading is not None and hits:
                best.set_result(hits[0].chunk_id)
                stats = await reading  # None when it fails
                coverage = stats.top_coverage_present if stats is not None else None
            return hits, (await count if count is not None else None), coverage
        finally:
            if reading is not None and not reading.done():
                reading.cancel()  # no hit, a failed search, or this search cancelled


async def retrieve(
    *,
    pool: AsyncConnectionPool,
    lexical: LexicalSearcher | None,
    principal: Principal,
    text: str,
    vector: npt.NDArray[np.float32] | None,
    preds: Sequence[Predicate],
    mode: str,
    settings: QuerySettings,
    timings: Timings,
    limit: int,
    with_embeddings: bool,
    space: Space | None = None,
    terms: TermReader | None = None,
) -> SubSearchResult:
    """``terms`` reads the query's words in the caller's corpus for the coverage
    weighting (``RankingSettings.lexical_coverage_ramp`` > 0 in a hybrid score fusion)."""
    degraded: list[str] = []
    timeout_ms = int(settings.backend_timeout_s * 1000)
    async with rls_transaction(pool, principal, statement_timeout_ms=timeout_ms) as conn:
        t0 = asyncio.get_running_loop().time()
        dense_hits: list[DenseHit] = []
        lex_task = (
            asyncio.create_task(
                _lexical(
                    lexical,
                    principal,
                    text,
                    preds,
                    limit=limit,
                    timeout_s=settings.backend_timeout_s,
                    timings=timings,
                    with_count=settings.ranking.fusion == "score"
                    and settings.ranking.lexical_evidence_none
                    + settings.ranking.lexical_evidence_ramp
                    > 0,
                    terms=terms
                    if mode == "hybrid"
                    and settings.ranking.fusion == "score"
                    and settings.ranking.lexical_coverage_ramp > 0
                    else None,
                )
            )
            if mode != "dense"
            else None
        )
        try:
            if mode != "lexical" and vector is not None:
                with timings.stage("dense"):
                    dense_hits = await dense_search(
                        conn,
                        principal,
                        vector,
                        preds,
                        limit=limit,
                        ef_search=settings.ranking.hnsw_ef_search,
                        max_scan_tuples=settings.ranking.hnsw_max_scan_tuples,
                        space=space,
                    )
            lex_hits, chunks, coverage = (
                await lex_task if lex_task is not None else ([], None, None)
            )
        finally:
            if lex_task is not None and not lex_task.done():
                lex_task.cancel()
        timings.add("retrieve", asyncio.get_running_loop().time() - t0)
        if lex_hits is None:
            if mode == "lexical":
                raise BackendUnavailable("opensearch unavailable for a lexical-only search")
            degraded.append("lexical_unavailable")
            lex_hits = []
        with timings.stage("fusion"):
            fused = fuse(dense_hits, lex_hits, settings.ranking, chunks=chunks, coverage=coverage)
        bm25 = {h.chunk_id: h.score for h in lex_hits}
        with timings.stage("hydrate"):
            rows = await hydrate(
                conn,
                principal,
                [f.key for f in fused],
                preds,
                vector=vector,
                with_embeddings=with_embeddings,
                space=space,
            )
        if settings.ranking.lexical_cosine_ramp > 0 and dense_hits and lex_hits:
            # agreement weighting reads the query's cosine to every BM25 hit, which only
            # hydration computes: fuse again with those cosines (off by default)
            with timings.stage("fusion"):
                cosines = {k: r.similarity for k, r in rows.items() if r.similarity is not None}
                fused = fuse(
                    dense_hits,
                    lex_hits,
                    settings.ranking,
                    chunks=chunks,
                    cosines=cosines,
                    coverage=coverage,
                )
    idents = identifiers(text) if mode != "dense" else set()  # a lexical signal
    if idents:
        fused = exact_refuse(fused, rows, idents, settings.ranking)
    out = [
        Candidate(
            row=rows[f.key],
            rrf=f.score,
            dense_rank=f.ranks.get("dense"),
            bm25_rank=f.ranks.get("lexical"),
            bm25_score=bm25.get(f.key),
        )
        for f in fused
        if f.key in rows
    ]
    return SubSearchResult(candidates=out, degraded=degraded)


def fuse(
    dense_hits: Sequence[DenseHit],
    lex_hits: Sequence[LexicalHit],
    settings: RankingSettings,
    *,
    chunks: int | None = None,
    cosines: Mapping[str, float] | None = None,
    coverage: float | None = None,
) -> list[FusedHit]:
    """The two legs into one order, by ``settings.fusion`` (rrf or normalised scores).
    Score fusion weighs each BM25 hit by its evidence (``fusion.lexical_evidence`` over
    ``chunks``, the index's chunk count; unweighted when that is unknown) and, with
    ``lexical_cosine_ramp`` on, by the query's cosine to it (``cosines``, by chunk id, as
    hydration reads them) against the dense leg's best (``fusion.cosine_weight``), and,
    with ``lexical_coverage_ramp`` on, every BM25 hit by the query's ``coverage`` (the IDF
    share of the query the best BM25 hit holds; ``fusion.coverage_weight``): a hit counts
    by the larger of its evidence weight and the query's coverage weight (unknown
    coverage: weight 1)."""
    weights = {"dense": settings.weight_dense, "lexical": settings.weight_lexical}
    if settings.fusion == "score":
        hit_weights: dict[str, Callable[[float], float]] | None = None
        floor = (
            coverage_weight(
                coverage,
                none=settings.lexical_coverage_none,
                full=settings.lexical_coverage_none + settings.lexical_coverage_ramp,
            )
            if settings.lexical_coverage_ramp > 0
            else None
        )
        none = settings.lexical_evidence_none
        full = none + settings.lexical_evidence_ramp
        unit = chunks if full > 0 else None  # evidence weighting needs the chunk count
        if unit is not None or floor is not None:

            def by_hit(score: float) -> float:
                w = (
                    0.0
                    if unit is None
                    else evidence_weight(lexical_evidence(score, unit), none=none, full=full)
                )
                return w if floor is None else max(w, floor)

            hit_weights = {"lexical": by_hit}
        key_weights = None
        if cosines is not None and dense_hits and settings.lexical_cosine_ramp > 0:
            best = max(h.similarity for h in dense_hits)
            key_weights = {
                "lexical": {
                    h.chunk_id: cosine_weight(
                        cosines.get(h.chunk_id),
                        best,
                        gap=settings.lexical_cosine_gap,
                        ramp=settings.lexical_cosine_ramp,
                    )
                    for h in lex_hits
                }
            }
        return score_fusion(
            {
                "dense": [(h.chunk_id, h.similarity) for h in dense_hits],
                "lexical": [(h.chunk_id, h.score) for h in lex_hits],
            },
            weights=weights,
            norm=settings.score_norm,
            hit_weights=hit_weights,
            key_weights=key_weights,
        )
    return rrf(
        {"dense": [h.chunk_id for h in dense_hits], "lexical": [h.chunk_id for h in lex_hits]},
        k=settings.rrf_k,
        weights=weights,
    )


def exact_refuse(
    fused: list[FusedHit], rows: dict[str, ChunkRow], idents: set[str], settings: RankingSettings
) -> list[FusedHit]:
    """Exact-identifier boost: a query naming an error code or ticket key (``ERR-4711``)
    gets a third RRF list of the candidates whose text names it, in fusion order. Embeddings
    blur such tokens, so plain RRF can bury the one exact match under many look-alikes
    that are close in vector space. "Names" is ``ident_match``'s test, as the abstention
    rule and the corpus lookup use it: ``ERR4711`` and full-width forms count, ``XERR-47110``
    does not (a raw substring test had it the other way round)."""
    if settings.weight_exact <= 0:
        return fused
    exact = [f.key for f in fused if f.key in rows and matches_any(idents, rows[f.key].text)]
    if not exact:
        return fused
    if settings.fusion == "score":
        # a verbatim match adds weight_exact, as much as a retriever's best hit would
        bonus = set(exact)
        boosted = [
            FusedHit(key=f.key, score=f.score + settings.weight_exact, ranks=f.ranks)
            if f.key in bonus
            else f
            for f in fused
        ]
        return sorted(boosted, key=lambda f: (-f.score, min(f.ranks.values()), f.key))
    rankings: dict[str, list[str]] = {"dense": [], "lexical": [], "exact": exact}
    for name in ("dense", "lexical"):
        ranked = sorted((f for f in fused if name in f.ranks), key=lambda f: f.ranks[name])
        rankings[name] = [f.key for f in ranked]
    return rrf(
        rankings,
        k=settings.rrf_k,
        weights={
            "dense": settings.weight_dense,
            "lexical": settings.weight_lexical,
            "exact": settings.weight_exact,
        },
    )


async def rerank_candidates(
    reranker: Reranker | None,
    query: str,
    cands: list[Candidate],
    *,
    top_n: int,
    timeout_s: float,
    timings: Timings,
) -> tuple[list[Candidate], str | None]:
    """Rerank the first ``top_n``; on any failure keep the fusion order and say why."""
    if not cands:
        return cands, None
    if reranker is None:
        return cands, "rerank_unavailable"
    head, tail = cands[:top_n], cands[top_n:]
    with timings.stage("rerank"):
        try:
            scores = await reranker.score(query, [c.row.text for c in head], timeout_s=timeout_s)
        except RerankFailed as exc:
            return cands, exc.reason
    if len(scores) != len(head):
        return cands, "rerank_failed"
    scored = [replace(c, rerank=s) for c, s in zip(head, scores, strict=True)]
    scored.sort(key=lambda c: -(c.rerank or 0.0))
    return scored + tail, None


def resolve_series(cands: list[Candidate], at: date) -> list[Candidate]:
    """As-of searches: per document series keep only the version in force at ``at`` (the
    latest effective date not after it) among the candidates."""
    best: dict[str, date] = {}
    for c in cands:
        s, d = c.row.series_id, c.row.effective_date
        if s is not None and d is not None and d <= at and (s not in best or d > best[s]):
            best[s] = d
    return [
        c
        for c in cands
        if c.row.series_id is None
        or c.row.series_id not in best
        or c.row.effective_date == best[c.row.series_id]
    ]
