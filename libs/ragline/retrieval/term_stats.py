"""The query's words in the caller's corpus: in how many of the child chunks the caller
can see each word of the query occurs (as the lexical index analyses it: English
stemming and stop words of the ``body`` field), and which of them the best lexical hit
holds (``term_evidence.TermStats``, for abstention).

Read from the lexical index itself, under exactly the scope filters of the lexical leg
(tenant index, tenant, ACL groups, versions, supersession, effective dates; deleted
chunks are gone from the index): one ``_analyze`` of the query, then ONE search with
``size`` 0 over the chunks in scope that hold one of the query's words, whose ``filters``
aggregation counts them per word (``lexical.LexicalSearcher.term_counts``), and a count
of the chunks in scope. Counts are over the caller's scope only, so they reveal nothing
about other tenants or groups, and the cost no longer grows with the caller's corpus
(the Postgres scan it replaces parsed every visible chunk, ~1 ms each, and had to give
large callers none). When the lookup fails or times out, the similarity threshold
decides alone.

Cached briefly (``ttl_s``, 30 s): a word's count and the scope's total, keyed by the
scope's whole filter (tenant, ACL groups and the request's predicates, serialised), so
two callers share an entry only when they see exactly the same chunks. Which words the
top hit holds is never cached (one chunk, read with the missing counts). A count may so
lag the index by up to ``ttl_s``: abstention weighs rarity, which a few seconds of
ingest do not change.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Sequence

from ragline.auth.principal import Principal
from ragline.errors import RaglineError
from ragline.retrieval.filters import Predicate
from ragline.retrieval.lexical import LexicalSearcher, scope_filter
from ragline.retrieval.term_evidence import MAX_TERMS, TermStats, query_terms

__all__ = ["MAX_TERMS", "QueryTermFrequency", "query_terms"]

_log = logging.getLogger(__name__)


class QueryTermFrequency:
    def __init__(
        self,
        lexical: LexicalSearcher | None,
        *,
        timeout_s: float = 1.0,
        ttl_s: float = 30.0,
        max_entries: int = 65536,
    ) -> None:
        self._lexical = lexical
        self._timeout_s = timeout_s
        self._ttl = ttl_s
        self._max = max_entries
        # (scope filter, word) -> (when, chunks holding it); (scope filter, "") -> total
        self._counts: dict[tuple[str, str], tuple[float, int]] = {}

    def _cached(self, key: tuple[str, str], now: float) -> int | None:
        hit = self._counts.get(key)
        return hit[1] if hit is not None and now - hit[0] < self._ttl else None

    async def get(
        self,
        principal: Principal,
        query: str,
        preds: Sequence[Predicate],
        top_chunk_id: str | None,
    ) -> TermStats | None:
        """None when there is nothing to weigh or the index cannot answer."""
        known: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        known.set_result(top_chunk_id)
        return await self.read(principal, query, preds, known)

    async def read(
        self,
        principal: Principal,
        query: str,
        preds: Sequence[Predicate],
        best: Awaitable[str | None],
    ) -> TermStats | None:
        """``get`` for a best lexical hit not known yet: the query's analysis runs first
        (it needs no hit), ``best`` is awaited only for the counts, so a caller can start
        this beside the BM25 search and hand over the best hit when it arrives. None when
        there is nothing to weigh or the index cannot answer."""
        lexical = self._lexical
        if lexical is None:
            return None
        try:
            terms = await lexical.query_terms(principal, query, timeout_s=self._timeout_s)
            if not terms:
                return None
            top_chunk_id = await best
            scope = json.dumps(scope_filter(principal, preds), sort_keys=True, default=str)
            now = time.monotonic()
            df = {t: n for t in terms if (n := self._cached((scope, t), now)) is not None}
            total = self._cached((scope, ""), now)
            missing = [t for t in terms if t not in df]
            top: frozenset[str] = frozenset()
            if missing or total is None or top_chunk_id is not None:
                got_total, got, top = await lexical.term_counts(
                    principal,
                    missing,
                    preds,
                    top_chunk_id=top_chunk_id,
                    top_terms=terms,
                    count_total=total is None,
                    timeout_s=self._timeout_s,
                )
                if len(self._counts) + len(got) + 1 > self._max:
                    self._counts.clear()
                for t, n in got.items():
                    self._counts[(scope, t)] = (now, n)
                    df[t] = n
                if got_total is not None:
                    total = got_total
                    self._counts[(scope, "")] = (now, got_total)
        except RaglineError as exc:
            _log.warning(
                "query term lookup failed", extra={"fields": {"error": type(exc).__name__}}
            )
            return None
        return TermStats(chunks=total or 0, df={t: df.get(t, 0) for t in terms}, top=top)
