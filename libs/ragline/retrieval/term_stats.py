"""The query's words in the caller's corpus: in how many of the child chunks the caller
can see each word of the query occurs (as the lexical index analyses it: English
stemming and stop words of the ``body`` field), and which of them the best lexical hit
holds (``term_evidence.TermStats``, for abstention).

Read from the lexical index itself, under exactly the scope filters of the lexical leg
(tenant index, tenant, ACL groups, versions, supersession, effective dates; deleted
chunks are gone from the index): one ``_analyze`` of the query, then ONE search with
``size`` 0 whose ``filters`` aggregation counts, per query word, the matching chunks
the caller may see (``lexical.LexicalSearcher.term_stats``). Counts are over the
caller's scope only, so they reveal nothing about other tenants or groups, and the
cost no longer grows with the caller's corpus (the Postgres scan it replaces parsed
every visible chunk, ~1 ms each, and had to give large callers none). When the lookup
fails or times out, the similarity threshold decides alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ragline.auth.principal import Principal
from ragline.errors import RaglineError
from ragline.retrieval.filters import Predicate
from ragline.retrieval.lexical import LexicalSearcher
from ragline.retrieval.term_evidence import MAX_TERMS, TermStats, query_terms

__all__ = ["MAX_TERMS", "QueryTermFrequency", "query_terms"]

_log = logging.getLogger(__name__)


class QueryTermFrequency:
    def __init__(self, lexical: LexicalSearcher | None, *, timeout_s: float = 1.0) -> None:
        self._lexical = lexical
        self._timeout_s = timeout_s

    async def get(
        self,
        principal: Principal,
        query: str,
        preds: Sequence[Predicate],
        top_chunk_id: str | None,
    ) -> TermStats | None:
        """None when there is nothing to weigh or the index cannot answer."""
        if self._lexical is None:
            return None
        try:
            return await self._lexical.term_stats(
                principal, query, preds, top_chunk_id=top_chunk_id, timeout_s=self._timeout_s
            )
        except RaglineError as exc:
            _log.warning(
                "query term lookup failed", extra={"fields": {"error": type(exc).__name__}}
            )
            return None
