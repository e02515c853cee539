"""One search, end to end: intent -> cache seam -> embed -> per sub-search (dense + BM25
-> RRF -> RLS re-read -> rerank) -> merge -> diversity -> parent expansion -> abstain ->
evidence with citations -> audit. Timings per stage and a trace id on every response.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import numpy.typing as npt
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.errors import RaglineError
from ragline.retrieval.abstain import AbstainPolicy, Evidence, assess, rule_identifiers
from ragline.retrieval.answerability import (
    SENTENCE_PASSAGES,
    default_model,
    load_model,
    sentences,
)
from ragline.retrieval.api_models import (
    AbstainEvidence,
    Citation,
    Flags,
    Result,
    Scores,
    SearchRequest,
    SearchResponse,
)
from ragline.retrieval.audit import AuditRecord, audit_key, write_audit
from ragline.retrieval.cache_seam import CacheKey, NoCache, ResultCache
from ragline.retrieval.candidates import (
    Candidate,
    SubSearchResult,
    rerank_candidates,
    resolve_series,
    retrieve,
)
from ragline.retrieval.diversity import mmr_order
from ragline.retrieval.doc_cap import cap_per_document_by_evidence
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.expansion import dedupe_by_parent, fetch_parents
from ragline.retrieval.filters import Predicate, SearchFilters, compile_predicates
from ragline.retrieval.fusion import rrf
from ragline.retrieval.in_force import shadowed_versions
from ragline.retrieval.intent import Intent, SubSearch, parse_intent
from ragline.retrieval.lexical import LexicalSearcher
from ragline.retrieval.metrics import ABSTAINED, DEGRADED, RESULTS
from ragline.retrieval.probe import SearchProbe
from ragline.retrieval.rerank import Reranker
from ragline.retrieval.scope import rls_transaction
from ragline.retrieval.settings import QuerySettings
from ragline.retrieval.spaces import SpaceResolver
from ragline.retrieval.specificity import IdentifierFrequency
from ragline.retrieval.term_evidence import TermPolicy, TermStats
from ragline.retrieval.term_stats import QueryTermFrequency
from ragline.retrieval.timing import Timings
from ragline.retrieval.versions import KnownVersions
from ragline.store.space_model import Space

__all__ = ["InvalidRequest", "SearchBackends", "SearchService"]


class InvalidRequest(RaglineError):
    """The request is well-formed JSON but asks for something not allowed (400)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(kw_only=True)
class SearchBackends:
    pool: AsyncConnectionPool
    lexical: LexicalSearcher | None
    embedder: QueryEmbedder
    reranker: Reranker | None = None
    cache: ResultCache = field(default_factory=NoCache)


def _sub_filters(filters: SearchFilters | None, sub: SubSearch) -> SearchFilters | None:
    if sub.versions is None:
        return filters
    base = filters or SearchFilters()
    return base.model_copy(update={"versions": sub.versions})


def _result(c: Candidate, parents: dict[str, str], expand: bool) -> Result:
    r = c.row
    return Result(
        chunk_id=r.chunk_id,
        document_id=r.document_id,
        text=r.text,
        parent_text=parents.get(r.parent_id) if expand and r.parent_id else None,
        scores=Scores(
            bm25_rank=c.bm25_rank,
            dense_rank=c.dense_rank,
            bm25_score=c.bm25_score,
            dense_score=r.similarity,
            fused=c.rrf,
            rerank=c.rerank,
        ),
        citation=Citation(
            title=r.title,
            section_path=list(r.section_path),
            version=r.version,
            effective_date=r.effective_date,
            uri=r.uri,
            page_start=r.page_start,
            page_end=r.page_end,
            line_start=r.line_start,
            line_end=r.line_end,
        ),
        flags=Flags(
            injection_suspect=r.injection_suspect,
            contains_pii=bool(r.pii_types),
            source_trust=r.trust,
        ),
        content_type=r.content_type,
        query_index=c.query_index,
        version_label=c.label,
    )


def _strength(c: Candidate) -> float:
    """Which of a document's chunks the per-document cap keeps (lower = stronger): the
    reranker's score when it ran, else the chunk's best rank in either retriever."""
    if c.rerank is not None:
        return -c.rerank
    ranks = [r for r in (c.dense_rank, c.bm25_rank) if r is not None]
    return float(min(ranks)) if ranks else float("inf")


class SearchService:
    def __init__(
        self,
        backends: SearchBackends,
        settings: QuerySettings,
        *,
        today: Callable[[], date] = date.today,
    ) -> None:
        self._b = backends
        self._s = settings
        self._today = today
        self._versions = KnownVersions(backends.pool)
        self._spaces = SpaceResolver(backends.pool)
        self._ident_df = IdentifierFrequency(backends.lexical)
        self._term_df = QueryTermFrequency(backends.lexical)
        self._policy = AbstainPolicy(
            min_similarity=settings.ranking.abstain_min_similarity,
            min_rerank=settings.ranking.abstain_min_rerank,
            identifier_missing_min_similarity=(
                settings.ranking.abstain_identifier_missing_min_similarity
            ),
            identifier_missing_min_share=settings.ranking.abstain_identifier_missing_min_share,
            model=(
                (
                    load_model(settings.ranking.abstain_model_path)
                    if settings.ranking.abstain_model_path is not None
                    else default_model()
                )
                if settings.ranking.abstain_model == "answerability"
                else None
            ),
            terms=TermPolicy() if settings.ranking.abstain_terms else None,
        )

    def _validate(self, req: SearchRequest) -> None:
        if len(req.query_texts) > self._s.ranking.max_queries:
            raise InvalidRequest(
                "queries", f"at most {self._s.ranking.max_queries} queries per request"
            )
        if req.top_k > self._s.ranking.max_top_k:
            raise InvalidRequest("top_k", f"at most {self._s.ranking.max_top_k}")

    async def search(
        self,
        principal: Principal,
        req: SearchRequest,
        *,
        trace_id: str,
        space: str | None = None,
        probe: SearchProbe | None = None,
    ) -> SearchResponse:
        """``space``: an admin's explicit embedding space (None: the live one); resolved
        once here and used for the query vector, the dense leg and the cache key.
        ``probe``: filled with the intermediate candidate lists (the why-not explainer)."""
        self._validate(req)
        t = Timings()
        sp = await self._spaces.resolve(space)
        with t.stage("intent"):
            vocab = await self._versions.get(principal)
            intent = parse_intent(
                req.query_texts,
                req.filters,
                as_of=req.as_of,
                include_history=req.include_history,
                today=self._today(),
                known_versions=vocab.labels,
                product_words=vocab.products,
            )
        vectors: dict[str, npt.NDArray[np.float32]] = {}
        if req.mode != "lexical":
            texts = list(dict.fromkeys(s.query for s in intent.searches))
            with t.stage("embed"):
                embedded = await self._b.embedder.embed(texts)
            vectors = {q: sp.query_vector(v) for q, v in zip(texts, embedded, strict=True)}
        if probe is not None:
            probe.intent, probe.space, probe.vectors = intent, sp, vectors
        key = CacheKey(
            principal=principal,
            queries=req.query_texts,
            vectors=tuple(vectors.values()),
            request=req.model_dump(mode="json", exclude={"query", "queries"})
            | {"scope": intent.scope.model_dump(mode="json"), "space": sp.space_id}
            | ({"answerability": self._policy.model.version} if self._policy.model else {}),
        )
        with t.stage("cache"):
            cached = None if probe is not None else await self._b.cache.lookup(key)
        if cached is not None:
            async with rls_transaction(self._b.pool, principal) as conn:
                await self._audit(
                    conn,
                    key,
                    trace_id,
                    cached.results,
                    "hit",
                    cached.abstain_reason,
                    cached.degraded,
                )
            return cached.model_copy(
                update={"cache": "hit", "trace_id": trace_id, "timings_ms": t.finish()}
            )

        shadowed: tuple[str, ...] = ()
        if intent.replaced_on is not None:
            with t.stage("in_force"):
                shadowed = (
                    await shadowed_versions(self._b.pool, principal, intent.replaced_on) or ()
                )
        subs = await asyncio.gather(
            *(
                self._sub_search(principal, req, intent, s, vectors, t, sp, shadowed, probe)
                for s in intent.searches
            )
        )
        degraded = sorted({d for s in subs for d in s.degraded})
        merged = self._merge(list(subs), by_side=intent.scope.mode == "compare")
        final = self._diversify(req, merged, probe)
        for d in degraded:
            DEGRADED.labels(d).inc()

        parents: dict[str, str] = {}
        results: list[Result] = []
        # both legs answered: the term rules and the answerability model apply
        hybrid = req.mode == "hybrid" and "lexical_unavailable" not in degraded
        sentence_sims = None
        if (
            hybrid
            and final
            and self._policy.model is not None
            and self._policy.model.reads_sentences
        ):
            with t.stage("passage"):
                sentence_sims = await self._sentence_sims(final, list(vectors.values()), sp)
        with t.stage("abstain"):
            idents = rule_identifiers(req.query_texts)
            stats = await self._ident_df.get(principal, idents) if idents and final else None
            evidence = [
                Evidence(
                    text=c.row.text,
                    similarity=c.row.similarity,
                    rerank=c.rerank,
                    bm25_score=c.bm25_score,
                    dense_rank=c.dense_rank,
                    bm25_rank=c.bm25_rank,
                )
                for c in final
            ]
            terms = await self._query_terms(principal, req, intent, final) if hybrid else None
            assessment = assess(
                evidence,
                req.query_texts,
                self._policy,
                stats,
                terms,
                threshold=req.answerable_threshold,
                hybrid=hybrid,
                sentence_sims=sentence_sims,
            )
            reason = assessment.reason
        with t.stage("finalize"):
            async with rls_transaction(self._b.pool, principal) as conn:
                if reason is None and req.expand_parents:
                    parents = await fetch_parents(
                        conn, principal, [c.row.parent_id for c in final if c.row.parent_id]
                    )
                if reason is None:
                    results = [_result(c, parents, req.expand_parents) for c in final]
                cache_state = "miss" if self._b.cache.state == "on" else "off"
                await self._audit(conn, key, trace_id, results, cache_state, reason, degraded)
        if probe is not None:
            probe.abstain_reason = reason
        if reason is not None:
            ABSTAINED.labels(reason).inc()
        RESULTS.observe(len(results))
        response = SearchResponse(
            results=results,
            abstained=reason is not None,
            abstain_reason=reason,
            evidence=AbstainEvidence(
                signal=assessment.signal,
                best_similarity=assessment.best_similarity,
                best_rerank=assessment.best_rerank,
                threshold=assessment.threshold,
                answerable_probability=assessment.answerable_probability,
                features=dict(assessment.features) if assessment.features is not None else None,
            ),
            version_scope=intent.scope,
            timings_ms=t.finish(),
            cache="miss" if self._b.cache.state == "on" else "off",
            trace_id=trace_id,
            degraded=degraded,
            mode=req.mode,
        )
        if self._b.cache.state == "on" and not degraded and probe is None:
            await self._b.cache.store(key, response)
        return response

    async def _sentence_sims(
        self, final: list[Candidate], queries: list[npt.NDArray[np.float32]], sp: Space
    ) -> list[float] | None:
        """The best cosine of the query (any sub-search's) with each sentence of the first
        ``SENTENCE_PASSAGES`` results, embedded by the query embedder (its LRU cache holds
        a sentence seen before): the answerability model's ``sent_max``."""
        sents = [s for c in final[:SENTENCE_PASSAGES] for s in sentences(c.row.text)]
        if not sents or not queries:
            return None
        vecs = await self._b.embedder.embed(sents)
        q = np.stack(queries)
        return [float(np.max(q @ sp.query_vector(v))) for v in vecs]

    async def _query_terms(
        self, principal: Principal, req: SearchRequest, intent: Intent, final: list[Candidate]
    ) -> TermStats | None:
        """The query's words in the caller's corpus, read only when they can count: the
        best similarity within the term rules' reach (term_evidence.py), or the
        answerability model weighs them (a query with a number; any query when a refit
        gives the word shares a weight). Counted in
        the lexical index under the first sub-search's filters (the lexical leg's)."""
        tp = self._policy.terms
        sims = [c.row.similarity for c in final if c.row.similarity is not None]
        if not sims:
            return None
        best, thr = max(sims), self._policy.min_similarity
        # the rules weigh the words near the similarity threshold only; the shipped model
        # weighs them only through a number of the query (missing_number): one lookup
        # (an _analyze and a size-0 search, ~30-60 ms measured under load) when either can
        # use it, not on every search
        rules_can = tp is not None and thr - tp.band <= best < max(thr, tp.missing_min_similarity)
        model_can = self._policy.model is not None and (
            self._policy.model.reads_terms or any(ch.isdigit() for q in req.query_texts for ch in q)
        )
        if not (rules_can or model_can):
            return None
        lexical = [c for c in final if c.bm25_rank is not None]
        top = min(lexical, key=lambda c: c.bm25_rank or 0).row.chunk_id if lexical else None
        preds = self._preds(req, intent, intent.searches[0])
        return await self._term_df.get(principal, " ".join(req.query_texts), preds, top)

    def _preds(
        self,
        req: SearchRequest,
        intent: Intent,
        sub: SubSearch,
        shadowed: tuple[str, ...] = (),
    ) -> list[Predicate]:
        return compile_predicates(
            _sub_filters(req.filters, sub),
            include_superseded=intent.include_superseded,
            effective_at=intent.effective_at,
            effective_until=intent.effective_until,
            unversioned_at=sub.unversioned_at,
            exclude_documents=shadowed,
        )

    async def _audit(
        self,
        conn: AsyncConnection,
        key: CacheKey,
        trace_id: str,
        results: list[Result],
        cache: str,
        reason: str | None,
        degraded: list[str],
    ) -> None:
        if not self._s.audit.audit_enabled:
            return
        await write_audit(
            conn,
            AuditRecord(
                principal=key.principal,
                trace_id=trace_id,
                queries=key.queries,
                mode=str(key.request.get("mode", "")),
                request=key.request,
                chunk_ids=tuple(r.chunk_id for r in results),
                document_ids=tuple(dict.fromkeys(r.document_id for r in results)),
                cache=cache,
                abstained=reason is not None,
                abstain_reason=reason,
                degraded=tuple(degraded),
            ),
            store_query=self._s.audit.audit_store_query,
            hash_key=audit_key(self._s.audit.audit_hash_key),
        )

    async def _sub_search(
        self,
        principal: Principal,
        req: SearchRequest,
        intent: Intent,
        sub: SubSearch,
        vectors: dict[str, npt.NDArray[np.float32]],
        t: Timings,
        space: Space | None = None,
        shadowed: tuple[str, ...] = (),
        probe: SearchProbe | None = None,
    ) -> SubSearchResult:
        preds = self._preds(req, intent, sub, shadowed)
        if probe is not None:
            probe.queries.append(sub.query)
            probe.preds.append(preds)
        lexical = self._b.lexical
        term_df = self._term_df
        if lexical is not None and space is not None and space.state == "shadow":
            # a gate of a shadow space (an admin named it) reads the tenant's shadow
            # lexical index too, when one is being built (blue-green, os_index.py), and
            # its statistics from there (uncached: a gate's searches are few)
            lexical = lexical.reading_shadow()
            term_df = QueryTermFrequency(lexical)
        res = await retrieve(
            pool=self._b.pool,
            lexical=lexical,
            principal=principal,
            text=sub.query,
            vector=vectors.get(sub.query),
            preds=preds,
            mode=req.mode,
            settings=self._s,
            timings=t,
            limit=max(self._s.ranking.overfetch, req.top_k),
            with_embeddings=req.mmr_lambda is not None,
            space=space,
            terms=lambda text, preds, top: term_df.read(principal, text, preds, top),
        )
        cands = res.candidates
        if probe is not None:
            probe.retrieved.extend(cands)
        if intent.resolve_series_at is not None:
            cands = resolve_series(cands, intent.resolve_series_at)
        if req.rerank:
            cands, why = await rerank_candidates(
                self._b.reranker,
                sub.query,
                cands,
                top_n=self._s.ranking.rerank_top_n,
                timeout_s=self._s.rerank_timeout_s,
                timings=t,
            )
            if why is not None:
                res.degraded.append(why)
        for c in cands:
            c.query_index = sub.query_index
            # a comparison side's label; an unversioned document is about no one side
            c.label = sub.label if c.row.version is not None else None
        if probe is not None:
            probe.resolved.extend(cands)
        return SubSearchResult(candidates=cands, degraded=res.degraded)

    def _merge(self, subs: list[SubSearchResult], *, by_side: bool = False) -> list[Candidate]:
        """Fan-out and comparison sides interleave by rank: every chunk at its best position
        in any sub-list, position first, then (fan-out) its RRF sum over the sub-lists, then
        sub-list order; a chunk found by several sub-searches is attributed to the one that
        ranked it best. Summing alone (plain RRF) let chunks that every sub-list's dense leg
        returns as filler outrank another sub-query's own best hit, so a second question
        could lose every slot (tests/integration/query/test_search.py fan-out); an
        unversioned document that every comparison side finds must likewise not outrank
        each side's own evidence just because it was found more than once."""
        if len(subs) == 1:
            return subs[0].candidates
        best: dict[str, tuple[int, int, Candidate]] = {}
        rankings: dict[str, list[str]] = {}
        for i, s in enumerate(subs):
            rankings[str(i)] = [c.row.chunk_id for c in s.candidates]
            for pos, c in enumerate(s.candidates):
                cid = c.row.chunk_id
                if cid not in best or pos < best[cid][0]:
                    best[cid] = (pos, i, c)
        if by_side:
            return [c for _, _, c in sorted(best.values(), key=lambda x: (x[0], x[1]))]
        fused = {h.key: h.score for h in rrf(rankings, k=self._s.ranking.rrf_k)}
        order = sorted(best.items(), key=lambda kv: (kv[1][0], -fused.get(kv[0], 0.0), kv[1][1]))
        return [c for _, (_, _, c) in order]

    def _diversify(
        self, req: SearchRequest, cands: list[Candidate], probe: SearchProbe | None = None
    ) -> list[Candidate]:
        if probe is not None:
            probe.merged = list(cands)
        if req.mmr_lambda is not None and cands:
            order = mmr_order(
                [c.rerank if c.rerank is not None else c.rrf for c in cands],
                [c.row.embedding for c in cands],
                lam=req.mmr_lambda,
                limit=len(cands),
            )
            cands = [cands[i] for i in order]
        cap = req.max_per_document or self._s.ranking.default_max_per_document
        cands = cap_per_document_by_evidence(cands, lambda c: c.row.document_id, _strength, cap)
        capped = cands
        if req.expand_parents:
            cands = dedupe_by_parent(cands, lambda c: c.row.parent_id)
        if probe is not None:
            probe.cap, probe.capped, probe.deduped = cap, capped, list(cands)
            probe.final = cands[: req.top_k]
        return cands[: req.top_k]
