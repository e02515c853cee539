"""The ONE way the query side searches OpenSearch.

``LexicalSearcher.search`` cannot be called without a verified ``Principal``: it picks
the principal's tenant index and always adds the tenant, ACL and default filters (not
superseded unless asked, effective at the scope date) to the ``bool.filter``. Hits are
candidates only: the service re-reads every one from Postgres under RLS before
returning it, so nothing OpenSearch holds (a stale ACL, a missed delete) can leak.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opensearchpy import AsyncOpenSearch

from ragline.auth.principal import Principal
from ragline.errors import PermanentError, TransientError
from ragline.retrieval.filters import Predicate, Terms, to_opensearch
from ragline.retrieval.term_evidence import TermStats, query_terms
from ragline.store.os_client import os_errors
from ragline.store.os_index import index_name, mapping_version, shadow_alias

__all__ = [
    "QUESTION_STOP_WORDS",
    "LexicalHit",
    "LexicalSearcher",
    "build_query",
    "scope_filter",
]

# ONE field: the contextual header (title > section path) and the chunk text, copied
# together at index time (store/os_index.py). BM25 then sees the header's words and the
# text's words in one length-normalised bag, as standard BM25 over "title + text" does;
# a best_fields multi_match over separate fields scored only the best single field and
# lost 0.03 nDCG@10 on SciFact (docs/evaluation.md "Lexical leg").
_FIELD = "body"
_MAX_ANALYZED = 20_000  # characters of a query analysed for its term statistics
_COUNT_TTL_S = 60.0  # how long an index's chunk count is reused (it enters as a log)
_EXACT_DOCS = 40_000  # distinct documents counted exactly (OpenSearch's maximum)
# A shard that fails (its node died, in a cluster) fails the whole request instead of
# answering from the shards left: the caller then sees the lexical leg unavailable
# (``degraded``), never a silently incomplete list or count.
_WHOLE: dict[str, Any] = {"allow_partial_search_results": False}
# Words a question is made of rather than about (Snowball's English stop list, the one
# PostgreSQL's 'english' configuration uses, on which the term rules were fitted):
# Lucene's own English stop set has 33 words and keeps "which", "how", "does", ...
_QUESTION_WORDS = (
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his "
    "himself she her hers herself it its itself they them their theirs themselves what "
    "which who whom this that these those am is are was were be been being have has had "
    "having do does did doing a an the and but if or because as until while of at by for "
    "with about against between into through during before after above below to from up "
    "down in out on off over under again further then once here there when where why how "
    "all any both each few more most other some such no nor not only own same so than too "
    "very s t can will just don should now"
)
QUESTION_STOP_WORDS: tuple[str, ...] = tuple(_QUESTION_WORDS.split())
# ``body``'s analyzer (Lucene's EnglishAnalyzer: possessive, lowercase, stop, Porter)
# with the question words also dropped before stemming: the terms it leaves are the
# index's own terms, so their document frequencies can be counted
_QUERY_TERMS_ANALYZER: dict[str, Any] = {
    "tokenizer": "standard",
    "filter": [
        {"type": "stemmer", "language": "possessive_english"},
        "lowercase",
        {"type": "stop", "stopwords": "_english_"},
        {"type": "stop", "stopwords": list(QUESTION_STOP_WORDS)},
        {"type": "stemmer", "language": "porter"},
    ],
}


@dataclass(frozen=True, kw_only=True)
class LexicalHit:
    chunk_id: str
    score: float
    rank: int


def scope_filter(principal: Principal, preds: Sequence[Predicate]) -> list[dict[str, Any]]:
    """The mandatory filter of every lexical request: tenant, the principal's ACL groups,
    then the request's predicates (versions, supersession, effective dates)."""
    if not isinstance(principal, Principal) or not principal.groups:
        raise PermanentError("a lexical search needs a principal with groups")
    scope: list[Predicate] = [
        Terms("tenant_id", (principal.tenant,)),
        Terms("acl_groups", principal.groups),
    ]
    return to_opensearch([*scope, *preds])


def build_query(
    principal: Principal, text: str, preds: Sequence[Predicate], *, limit: int
) -> dict[str, Any]:
    """The search body: BM25 over the text fields, mandatory scope filters. Only the chunk
    ids come back, read from doc values: no stored field is loaded (``_source`` filtering
    still decompresses each hit's whole stored document, text included)."""
    return {
        "size": limit,
        "track_total_hits": False,
        "stored_fields": "_none_",
        "docvalue_fields": ["chunk_id"],
        "query": {
            "bool": {
                "must": [{"match": {_FIELD: {"query": text}}}],
                "filter": scope_filter(principal, preds),
            }
        },
    }


def _per_term(terms: Sequence[str]) -> dict[str, Any]:
    """A ``filters`` aggregation with one bucket per word of ``body``."""
    return {"filters": {"filters": {t: {"term": {_FIELD: t}} for t in terms}}}


def _chunk_id(hit: Mapping[str, Any]) -> str | None:
    """The hit's chunk id: its ``chunk_id`` doc value (``build_query``), else ``_id``
    (the chunk id too: store/os_bulk.py)."""
    values = (hit.get("fields") or {}).get("chunk_id") or ()
    cid = values[0] if values else hit.get("_id")
    return str(cid) if cid else None


class LexicalSearcher:
    def __init__(
        self, client: AsyncOpenSearch, *, index_prefix: str, read_shadow: bool = False
    ) -> None:
        self._client = client
        self._prefix = index_prefix
        self._read_shadow = read_shadow
        self._counts: dict[str, tuple[float, int]] = {}  # index -> (monotonic time, chunks)

    def reading_shadow(self) -> LexicalSearcher:
        """The same searcher reading each tenant's shadow index while one is being built
        (blue-green, ``os_index.open_shadow``), the live one otherwise: what a gate of a
        shadow space searches (an admin naming a non-live space, ADR 0013)."""
        return LexicalSearcher(self._client, index_prefix=self._prefix, read_shadow=True)

    async def _search_index(self, principal: Principal) -> str:
        alias = index_name(self._prefix, principal.tenant)
        if not self._read_shadow:
            return alias
        shadow = shadow_alias(alias)
        with os_errors():
            return shadow if await self._client.indices.exists_alias(name=shadow) else alias

    async def search(
        self,
        principal: Principal,
        text: str,
        preds: Sequence[Predicate],
        *,
        limit: int,
        timeout_s: float = 5.0,
    ) -> list[LexicalHit]:
        body = build_query(principal, text, preds, limit=limit)
        index = await self._search_index(principal)
        with os_errors():
            resp = await self._client.search(
                index=index,
                body=body,
                ignore_unavailable=True,  # a tenant with no index yet has no hits
                **_WHOLE,
                request_timeout=timeout_s,
            )
        hits: list[LexicalHit] = []
        seen: set[str] = set()
        for h in resp.get("hits", {}).get("hits", ()):
            cid = _chunk_id(h)
            if cid is None:
                continue
            if cid in seen:
                continue
            seen.add(cid)
            hits.append(LexicalHit(chunk_id=cid, score=float(h.get("_score") or 0.0), rank=0))
        return [
            LexicalHit(chunk_id=h.chunk_id, score=h.score, rank=i)
            for i, h in enumerate(hits, start=1)
        ]

    async def term_stats(
        self,
        principal: Principal,
        text: str,
        preds: Sequence[Predicate],
        *,
        top_chunk_id: str | None,
        timeout_s: float = 1.0,
    ) -> TermStats | None:
        """Per word of ``text`` (as ``body`` analyses it, question words dropped:
        ``QUESTION_STOP_WORDS``), how many child chunks in the caller's scope hold it, how
        many chunks that scope has, and which words the chunk ``top_chunk_id`` holds
        (``query_terms`` then ``term_counts``, uncached: term_stats.py caches). None when
        the query has no word to weigh or the tenant has no index yet."""
        terms = await self.query_terms(principal, text, timeout_s=timeout_s)
        if not terms:
            return None
        total, df, top = await self.term_counts(
            principal,
            terms,
            preds,
            top_chunk_id=top_chunk_id,
            count_total=True,
            timeout_s=timeout_s,
        )
        return TermStats(chunks=total or 0, df=df, top=top)

    async def query_terms(
        self, principal: Principal, text: str, *, timeout_s: float = 1.0
    ) -> list[str] | None:
        """The words of ``text`` weighed (``query_terms`` of ``body``'s analysis, question
        words dropped): one ``_analyze``. None when the tenant has no index yet."""
        index = index_name(self._prefix, principal.tenant)
        with os_errors():
            if not await self._client.indices.exists(index=index, request_timeout=timeout_s):
                return None
            analyzed = await self._client.indices.analyze(
                body={**_QUERY_TERMS_ANALYZER, "text": text[:_MAX_ANALYZED]},
                request_timeout=timeout_s,
            )
        return query_terms(t.get("token") for t in analyzed.get("tokens", ()))

    async def term_counts(
        self,
        principal: Principal,
        terms: Sequence[str],
        preds: Sequence[Predicate],
        *,
        top_chunk_id: str | None,
        count_total: bool,
        top_terms: Sequence[str] | None = None,
        timeout_s: float = 1.0,
    ) -> tuple[int | None, dict[str, int], frozenset[str]]:
        """In how many child chunks of the caller's scope (``scope_filter`` with
        ``preds``: the lexical leg's own filter) each of ``terms`` occurs, which of
        ``top_terms`` (default: ``terms``) the chunk ``top_chunk_id`` holds, and
        (``count_total``) how many chunks that scope has.

        The counting search reads only the chunks that hold one of the words (or are the
        top chunk): its query is the scope AND any word, and a ``filters`` aggregation
        splits it per word. (Over the whole scope, the aggregation tested every word
        against every chunk the caller may see: linear in the corpus.) The scope's total
        is a second ``size: 0`` count, sent concurrently, only when asked."""
        index = index_name(self._prefix, principal.tenant)
        scope = scope_filter(principal, preds)
        searches: list[Any] = []
        top_terms = terms if top_terms is None else top_terms
        wanted: list[dict[str, Any]] = []
        aggs: dict[str, Any] = {}
        if terms:
            wanted.append({"terms": {_FIELD: list(terms)}})
            aggs["df"] = _per_term(terms)
        if top_chunk_id is not None and top_terms:
            top_filter = {"term": {"chunk_id": top_chunk_id}}
            wanted.append(top_filter)
            aggs["top"] = {"filter": top_filter, "aggs": {"df": _per_term(top_terms)}}
        if wanted:
            body = {
                "size": 0,
                "track_total_hits": False,
                "query": {
                    "bool": {
                        "filter": [
                            *scope,
                            {"bool": {"should": wanted, "minimum_should_match": 1}},
                        ]
                    }
                },
                "aggs": aggs,
            }
            searches.append(
                self._client.search(
                    index=index,
                    body=body,
                    ignore_unavailable=True,
                    request_timeout=timeout_s,
                    **_WHOLE,
                )
            )
        if count_total:
            count = {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": scope}}}
            searches.append(
                self._client.search(
                    index=index,
                    body=count,
                    ignore_unavailable=True,
                    request_timeout=timeout_s,
                    **_WHOLE,
                )
            )
        with os_errors():
            got = await asyncio.gather(*searches)
        df: dict[str, int] = dict.fromkeys(terms, 0)
        top: frozenset[str] = frozenset()
        if wanted:
            found = got[0].get("aggregations") or {}
            df.update(
                {t: int(b["doc_count"]) for t, b in found.get("df", {}).get("buckets", {}).items()}
            )
            top_buckets = found.get("top", {}).get("df", {}).get("buckets", {})
            top = frozenset(t for t, b in top_buckets.items() if int(b["doc_count"]) > 0)
        total = (
            int(got[-1].get("hits", {}).get("total", {}).get("value", 0)) if count_total else None
        )
        return total, df, top

    async def chunk_count(self, principal: Principal, *, timeout_s: float = 1.0) -> int | None:
        """How many chunks the principal's tenant index holds (what BM25's idf counts),
        cached per index for ``_COUNT_TTL_S``; None when unknown (no index, a failure).
        Only the fusion's evidence unit uses it (``fusion.lexical_evidence``)."""
        index = await self._search_index(principal)
        now = time.monotonic()
        cached = self._counts.get(index)
        if cached is not None and now - cached[0] < _COUNT_TTL_S:
            return cached[1]
        try:
            with os_errors():
                resp = await self._client.count(
                    index=index, ignore_unavailable=True, request_timeout=timeout_s
                )
        except (TransientError, PermanentError):
            return None
        n = int(resp.get("count", 0)) or None
        if n is not None:
            self._counts[index] = (now, n)
        return n

    async def mapping_version(self, principal: Principal) -> int | None:
        """The mapping version of the principal's tenant index (``os_index.mapping_version``:
        the oldest behind its alias); None when the tenant has no index yet."""
        return await mapping_version(self._client, index_name(self._prefix, principal.tenant))

    async def documents_matching(
        self,
        principal: Principal,
        queries: Mapping[str, Mapping[str, Any]],
        *,
        count_all: bool,
        timeout_s: float = 1.0,
    ) -> tuple[int | None, dict[str, int]]:
        """In how many documents of the caller's scope (``scope_filter`` with no request
        predicates: tenant and ACL groups, what RLS shows of ``chunks``) some child chunk
        matches each query, and (``count_all``) how many documents that scope has: a
        ``size: 0`` search whose query is the scope AND any of ``queries`` (only the
        matching chunks are read), a ``filters`` aggregation with a distinct count of
        ``document_id`` per query (exact below 40,000 documents, HyperLogLog++ above), and,
        when asked, a distinct count over the whole scope sent concurrently. A tenant with
        no index has no documents."""
        index = index_name(self._prefix, principal.tenant)
        scope = scope_filter(principal, ())
        docs: dict[str, Any] = {
            "cardinality": {"field": "document_id", "precision_threshold": _EXACT_DOCS}
        }
        searches: list[Any] = []
        if queries:
            any_query = {"bool": {"should": list(queries.values()), "minimum_should_match": 1}}
            body = {
                "size": 0,
                "track_total_hits": False,
                "query": {"bool": {"filter": [*scope, any_query]}},
                "aggs": {"df": {"filters": {"filters": dict(queries)}, "aggs": {"docs": docs}}},
            }
            searches.append(body)
        if count_all:
            searches.append(
                {
                    "size": 0,
                    "track_total_hits": False,
                    "query": {"bool": {"filter": scope}},
                    "aggs": {"docs": docs},
                }
            )
        if not searches:
            return None, {}
        with os_errors():
            got = await asyncio.gather(
                *(
                    self._client.search(
                        index=index,
                        body=b,
                        ignore_unavailable=True,
                        request_timeout=timeout_s,
                        **_WHOLE,
                    )
                    for b in searches
                )
            )
        buckets = (got[0].get("aggregations") or {}).get("df", {}).get("buckets", {})
        df = {k: int(b["docs"]["value"]) for k in queries if (b := buckets.get(k)) is not None}
        df = {**dict.fromkeys(queries, 0), **df}
        total = None
        if count_all:  # no index behind the alias: an empty corpus
            total = int(((got[-1].get("aggregations") or {}).get("docs") or {}).get("value", 0))
        return total, df

    async def ping(self) -> bool:
        with os_errors():
            return bool(await self._client.ping())
