"""The release labels a principal can see, and the words its titles put before them, so a
version named in a query ("Widget 6", "6.x", "Acme Gateway 3.9") is resolved against
the versions the caller's corpus really has.

Read under RLS (a caller never learns of versions, or titles, it cannot see) and cached
briefly per scope: versions change only when documents are ingested. The read is served
by the partial index of migration 0072 (versioned, indexed documents of the tenant only),
so a scope not in the cache costs an index range scan, not a walk of the tenant's
documents.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Principal
from ragline.retrieval.scope import rls_transaction

__all__ = ["VERSIONS_SQL", "KnownVersions", "VersionVocabulary", "product_words"]

# words that precede a version in titles without naming a product ("Notes for the 6.1 …")
_NOT_PRODUCTS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to"}
    | {"v", "ver", "version", "versions", "release", "releases", "rel", "vs", "with"}
)
# up to three words right before a label in a title ("Tern Navigator 6.1 Operator Manual")
_WORDS_BEFORE = (
    r"((?:[A-Za-z][A-Za-z\-]{{0,40}}\s+){{0,2}}[A-Za-z][A-Za-z\-]{{0,40}})"
    r"[\s(\[,:\-]{{1,4}}[vV]?{label}(?![\w.]|\.\d)"
)


# the predicate of migration 0072's partial index: keep them the same
VERSIONS_SQL = (
    "SELECT DISTINCT version, title FROM documents WHERE version IS NOT NULL AND status = 'indexed'"
)


@dataclass(frozen=True)
class VersionVocabulary:
    labels: frozenset[str] = frozenset()
    products: frozenset[str] = frozenset()  # lower-case words that introduce a version


def product_words(pairs: Iterable[tuple[str, str | None]]) -> frozenset[str]:
    """From ``(label, title)`` pairs: the name right before the label in the title, up to
    three words and back to the nearest stop word ("Tern Navigator 6.1 Operator Manual"
    -> ``tern``, ``navigator``; "Travel and Expense Policy (2023)" -> ``expense``,
    ``policy``)."""
    words: set[str] = set()
    for label, title in pairs:
        if not title or not label:
            continue
        bare = label[1:] if label[:1] in ("v", "V") and label[1:2].isdigit() else label
        pattern = _WORDS_BEFORE.format(label=re.escape(bare))
        for m in re.finditer(pattern, title[:500]):
            for w in reversed(m.group(1).lower().split()):
                w = w.strip("-")
                if len(w) < 2 or w in _NOT_PRODUCTS:
                    break
                words.add(w)
    return frozenset(words)


class KnownVersions:
    def __init__(self, pool: AsyncConnectionPool, *, ttl_s: float = 30.0, max_scopes: int = 4096):
        self._pool = pool
        self._ttl = ttl_s
        self._max = max_scopes
        self._cache: dict[str, tuple[float, VersionVocabulary]] = {}

    async def get(self, principal: Principal) -> VersionVocabulary:
        key = principal.scope_key
        hit = self._cache.get(key)
        now = time.monotonic()
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        async with rls_transaction(self._pool, principal) as conn:
            cur = await conn.execute(VERSIONS_SQL)
            rows = [(str(r[0]), r[1]) for r in await cur.fetchall()]
        vocab = VersionVocabulary(
            labels=frozenset(label for label, _ in rows), products=product_words(rows)
        )
        if len(self._cache) >= self._max:
            self._cache.clear()
        self._cache[key] = (now, vocab)
        return vocab
