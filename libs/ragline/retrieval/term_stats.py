"""The query's words in the caller's corpus: in how many of the child chunks the caller
can see each English-stemmed word of the query occurs, and which of them the best
lexical hit holds (``term_evidence.TermStats``, for abstention).

Read under RLS (counts cover the caller's own chunks only: they reveal nothing about
other tenants or groups) in one pass over the caller's child chunks, in one bounded
transaction (statement timeout), cached briefly per scope and word. No index can serve
it: under RLS the policy's quals run before any non-leakproof qual, and ``@@`` is not
leakproof (migration 0073). Parsing every chunk costs about 1 ms per chunk on a busy
machine (SciFact, 5,750 chunks: 4.7 s), so a caller who can see more than
``max_chunks`` child chunks gets no statistics (None) and the similarity threshold
decides alone, as it does when the lookup fails or times out. Serving larger corpora
needs the statistics from an index the query role may use: the lexical index's own
document frequencies (OpenSearch, under the same scope filters as the lexical leg).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable

from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.errors import RaglineError
from ragline.retrieval.scope import rls_transaction
from ragline.retrieval.term_evidence import TermStats

__all__ = ["TERMS_TEXT", "QueryTermFrequency", "df_query", "query_terms"]

_log = logging.getLogger(__name__)

_MAX_TERMS = 32  # words of one query weighed (sorted); a longer query keeps the first 32
_MAX_TEXT = 20_000  # characters of the query / the top hit that are parsed

# The text the words are counted in (the identifier lookup's, without lower()).
TERMS_TEXT = "coalesce(c.title, '') || ' ' || coalesce(c.contextual_header, '') || ' ' || c.text"
_LEXEMES = (
    "SELECT tsvector_to_array(to_tsvector('english'::regconfig, %s)),"
    " tsvector_to_array(to_tsvector('english'::regconfig, %s))"
)
_COMPOUND = re.compile(r"^[^-]+(?:-[^-]+)+$")
_CHUNKS = "SELECT count(*) FROM chunks WHERE level = 'child'"


def _clean(text: str) -> str:
    """Bounded, and sendable to Postgres (no NUL, no lone surrogate)."""
    t = text[:_MAX_TEXT].replace("\x00", " ")
    return t.encode("utf-8", "replace").decode("utf-8")


def query_terms(lexemes: Iterable[str] | None) -> list[str]:
    """The words weighed: a hyphenated compound ("long-haul", "grpc-web") is left out,
    its parts are separate lexemes already (PostgreSQL's parser emits both), and a
    compound is far rarer than its parts, which would count it as missing."""
    found = {str(t) for t in (lexemes or ())}
    return sorted(t for t in found if not _COMPOUND.match(t))[:_MAX_TERMS]


_COUNT_ONE = sql.SQL("count(*) FILTER (WHERE v @@ to_tsquery('simple', quote_literal({t}::text)))")


def df_query(terms: list[str]) -> sql.Composed:
    """One pass over the caller's child chunks: per word, how many hold it. Each chunk is
    parsed once, whatever the number of words."""
    counts = sql.SQL(", ").join(
        sql.SQL(
            "count(*) FILTER (WHERE v @@ to_tsquery('simple', quote_literal({t}::text)))"
        ).format(t=sql.Literal(t))
        for t in terms
    )
    return sql.SQL(
        "SELECT {counts} FROM (SELECT to_tsvector('english'::regconfig, {text}) AS v"
        " FROM chunks c WHERE c.level = 'child') s"
    ).format(counts=counts, text=sql.SQL(TERMS_TEXT))


class QueryTermFrequency:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        ttl_s: float = 30.0,
        timeout_ms: int = 1000,
        max_chunks: int = 2000,
        max_entries: int = 65536,
    ) -> None:
        self._pool = pool
        self._ttl = ttl_s
        self._timeout_ms = timeout_ms
        self._max_chunks = max_chunks
        self._max = max_entries
        self._df: dict[tuple[str, str], tuple[float, int]] = {}
        self._chunks: dict[str, tuple[float, int]] = {}

    async def get(self, principal: Principal, query: str, top_text: str) -> TermStats | None:
        scope = principal.scope_key
        now = time.monotonic()
        try:
            async with rls_transaction(
                self._pool, principal, statement_timeout_ms=self._timeout_ms
            ) as conn:
                cur = await conn.execute(_LEXEMES, (_clean(query), _clean(top_text)))
                row = await cur.fetchone()
                terms = query_terms(row[0] if row else ())
                top = frozenset(str(t) for t in (row[1] or ())) if row else frozenset()
                if not terms:
                    return None
                hit = self._chunks.get(scope)
                if hit is not None and now - hit[0] < self._ttl:
                    chunks = hit[1]
                else:
                    cur = await conn.execute(_CHUNKS)
                    crow = await cur.fetchone()
                    chunks = int(crow[0]) if crow else 0
                    if len(self._chunks) >= self._max:
                        self._chunks.clear()
                    self._chunks[scope] = (now, chunks)
                if chunks > self._max_chunks:
                    return None  # too many to parse per query (module docstring)
                df: dict[str, int] = {}
                missing: list[str] = []
                for t in terms:
                    cached = self._df.get((scope, t))
                    if cached is not None and now - cached[0] < self._ttl:
                        df[t] = cached[1]
                    else:
                        missing.append(t)
                if missing:
                    cur = await conn.execute(df_query(missing))
                    counts = await cur.fetchone()
                    df.update(zip(missing, (int(v) for v in counts or ()), strict=True))
        except RaglineError as exc:
            _log.warning(
                "query term lookup failed", extra={"fields": {"error": type(exc).__name__}}
            )
            return None
        if len(self._df) + len(missing) > self._max:
            self._df.clear()
        for t in missing:
            self._df[(scope, t)] = (now, df.get(t, 0))
        return TermStats(chunks=chunks, df=df, top=top & frozenset(df))
