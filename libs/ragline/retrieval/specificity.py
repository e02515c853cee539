"""How specific a query's identifiers are in the caller's corpus: in how many of the
documents the caller can see each one occurs (in a chunk's text, its document title or its
contextual header; matched as ``ident_match`` defines it: NFKC case-folded, whole letter
and digit runs, any separators: ``IFIT-1`` is ``IFIT1`` is ``ＩＦＩＴ１``), and how many
documents that is out of. The abstention rule (``abstain.IdentifierStats``) trusts an
exact match only for identifiers that are rare, and abstains when none occurs at all.

Read under RLS (counts are over the caller's own documents only, so they reveal nothing
about other tenants or groups), bounded by a statement timeout, cached briefly per scope
and identifier. A failed or timed-out lookup returns None: the rule then falls back to
"appears in a result".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.errors import RaglineError
from ragline.retrieval.abstain import IdentifierStats
from ragline.retrieval.ident_match import parts, sql_pattern
from ragline.retrieval.scope import rls_transaction

__all__ = ["IdentifierFrequency"]

_log = logging.getLogger(__name__)

_MAX_IDENTS = 16  # more than this in one query: the first 16 (sorted) are weighed
_MAX_LEN = 200

# The text an identifier is looked for in: a child chunk's title, contextual header and
# text, folded as ``ident_match.ident_text`` folds them. Migration 0150 stores it per chunk
# (``ident_text``, filled by a trigger); a row it could not fill is folded here, on the fly.
# No index serves this under RLS (LIKE and ~ are not leakproof, so the policy's quals run
# first: migration 0073); the lookup is one scan of the caller's child chunks, bounded by
# the statement timeout and the cache.
_SEARCHED = sql.SQL(
    "SELECT c.document_id, coalesce(c.ident_text,"
    " ragline_ident_text(c.title, c.contextual_header, c.text)) AS t"
    " FROM chunks c WHERE c.level = 'child' OFFSET 0"
)


def df_query(idents: list[str]) -> sql.Composed:
    """In how many documents (RLS: of the caller's) each identifier occurs, one column per
    identifier in order (the identifiers themselves are never sent, only their letter and
    digit runs: an identifier holding NUL or a lone surrogate is no error). Each is
    ``ident_match.sql_pattern`` behind a ``LIKE`` on its longest run, in one scan. Every
    identifier must have a letter or digit (``sql_pattern`` is not None)."""
    counts = []
    for i in idents:
        pattern = sql_pattern(i)
        if pattern is None:
            raise ValueError("an identifier without a letter or digit is looked up nowhere")
        counts.append(
            sql.SQL("count(DISTINCT s.document_id) FILTER (WHERE s.t LIKE {} AND s.t ~ {})").format(
                sql.Literal(like_pattern(max(parts(i), key=len))), sql.Literal(pattern)
            )
        )
    return sql.SQL("SELECT {} FROM ({}) AS s").format(sql.SQL(", ").join(counts), _SEARCHED)


def like_pattern(ident: str) -> str:
    """``%ident%`` with LIKE's wildcards and escape character taken literally."""
    escaped = ident.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_DOCS_SQL = "SELECT count(*) FROM documents WHERE status = 'indexed'"


class IdentifierFrequency:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        ttl_s: float = 30.0,
        timeout_ms: int = 1000,
        max_entries: int = 65536,
    ) -> None:
        self._pool = pool
        self._ttl = ttl_s
        self._timeout_ms = timeout_ms
        self._max = max_entries
        self._df: dict[tuple[str, str], tuple[float, int]] = {}
        self._docs: dict[str, tuple[float, int]] = {}

    async def get(self, principal: Principal, idents: Iterable[str]) -> IdentifierStats | None:
        wanted = sorted({i for i in idents if 0 < len(i) <= _MAX_LEN})[:_MAX_IDENTS]
        scope = principal.scope_key
        now = time.monotonic()
        fresh = {
            i: hit[1]
            for i in wanted
            if (hit := self._df.get((scope, i))) is not None and now - hit[0] < self._ttl
        }
        docs_hit = self._docs.get(scope)
        missing = [i for i in wanted if i not in fresh]
        documents = docs_hit[1] if docs_hit and now - docs_hit[0] < self._ttl else None
        if missing or documents is None:
            try:
                async with rls_transaction(
                    self._pool, principal, statement_timeout_ms=self._timeout_ms
                ) as conn:
                    if documents is None:
                        cur = await conn.execute(_DOCS_SQL)
                        row = await cur.fetchone()
                        documents = int(row[0]) if row else 0
                    looked = [i for i in missing if parts(i)]
                    fresh.update(dict.fromkeys(missing, 0))
                    if looked:
                        cur = await conn.execute(df_query(looked))
                        row = await cur.fetchone()
                        fresh.update(zip(looked, (int(n) for n in row or ()), strict=False))
            except RaglineError as exc:
                _log.warning(
                    "identifier frequency lookup failed",
                    extra={"fields": {"error": type(exc).__name__}},
                )
                return None
            if len(self._df) + len(missing) > self._max:
                self._df.clear()
            for i in missing:
                self._df[(scope, i)] = (now, fresh.get(i, 0))
            self._docs[scope] = (now, documents)
        return IdentifierStats(documents=documents, df=fresh)
