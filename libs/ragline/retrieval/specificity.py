"""How specific a query's identifiers are in the caller's corpus: in how many of the
documents the caller can see each one occurs (in a chunk's text, its document title or its
contextual header; matched as ``ident_match`` defines it: NFKC case-folded, whole letter
and digit runs, any separators: ``IFIT-1`` is ``IFIT1`` is ``ＩＦＩＴ１``), and how many
documents that is out of. The abstention rule (``abstain.IdentifierStats``) trusts an
exact match only for identifiers that are rare, and abstains when none occurs at all.

Read from the lexical index, under the lexical leg's own scope filter (tenant index,
tenant, the caller's ACL groups: what RLS shows of ``chunks``; deleted chunks are gone
from the index), so counts reveal nothing about other tenants or groups: ONE ``size: 0``
search whose ``filters`` aggregation counts distinct documents per identifier
(``lexical.LexicalSearcher.documents_matching``). The identifier is looked for in the
index's ``ident`` field (store/os_index.py): the chunk's title, header and text folded
as ``ident_match.ident_text`` folds them and split at the spaces, so every token is a
whole letter-and-digit run; an identifier is the phrases of its runs, a letter run and a
digit run either one token (``ifit1``) or two (``ifit 1``): exactly ``ident_match``'s test.
The Postgres scan this replaces read every visible chunk (a 1 s timeout at 1M chunks,
docs/benchmarks.md "Growth"). An index built before mapping version 4 has no ``ident``
in its older documents: the lookup then returns None until ``ragline reindex
opensearch``. Cached briefly per scope and identifier (30 s), the scope's document total
longer (300 s: a distinct count over the whole scope). A failed or timed-out lookup
returns None: the rule then falls back to "appears in a result".
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterable
from typing import Any

from ragline.auth.principal import Principal
from ragline.errors import RaglineError
from ragline.retrieval.abstain import IdentifierStats
from ragline.retrieval.ident_match import parts
from ragline.retrieval.lexical import LexicalSearcher
from ragline.store.os_index import IDENT_FIELD

__all__ = ["IDENT_MAPPING", "IdentifierFrequency", "ident_phrases", "ident_query"]

_log = logging.getLogger(__name__)

_MAX_IDENTS = 16  # more than this in one query: the first 16 (sorted) are weighed
_MAX_LEN = 200
# letter/digit joints tried both ways; further joints of a longer identifier (rare: six
# alternations, ``a1b2c3d4``) all split or all joined: 2**6 phrases at most
_MAX_JOINTS = 5
IDENT_MAPPING = 4  # the first mapping version whose documents all carry IDENT_FIELD


def ident_phrases(ident: str) -> list[str]:
    """The token sequences of the ``ident`` field that spell ``ident`` (``ident_match``):
    its runs, each joint of a letter run and a digit run either joined or split, two runs
    of one kind always split (``"IFIT-1"`` -> ``["ifit 1", "ifit1"]``; beyond five
    joints the rest all one way: ``_MAX_JOINTS``); [] when it has no letter or digit."""
    runs = parts(ident)
    if not runs:
        return []
    joints = [
        i for i, (a, b) in enumerate(itertools.pairwise(runs)) if a[0].isdigit() != b[0].isdigit()
    ]
    head, rest = joints[:_MAX_JOINTS], joints[_MAX_JOINTS:]
    phrases = []
    for joined in itertools.product((False, True), repeat=len(head)):
        for rest_joined in (False, True) if rest else (False,):
            glue = {**dict.fromkeys(rest, rest_joined), **dict(zip(head, joined, strict=True))}
            out = [runs[0]]
            for i, run in enumerate(runs[1:]):
                out.append("" if glue.get(i, False) else " ")
                out.append(run)
            phrases.append("".join(out))
    return phrases


def ident_query(ident: str) -> dict[str, Any]:
    """The query matching the chunks that name ``ident`` (one of ``ident_phrases``)."""
    return {
        "bool": {
            "should": [{"match_phrase": {IDENT_FIELD: p}} for p in ident_phrases(ident)],
            "minimum_should_match": 1,
        }
    }


class IdentifierFrequency:
    def __init__(
        self,
        lexical: LexicalSearcher | None,
        *,
        ttl_s: float = 30.0,
        documents_ttl_s: float = 300.0,
        timeout_ms: int = 1000,
        max_entries: int = 65536,
    ) -> None:
        self._lexical = lexical
        self._ttl = ttl_s
        # the scope's document total: a distinct count over every chunk the caller may
        # see (~170 ms at 344k chunks, growing with the corpus), of which the rule reads
        # only a share: kept 10x longer than the per-identifier counts
        self._docs_ttl = documents_ttl_s
        self._timeout_s = timeout_ms / 1000
        self._max = max_entries
        self._df: dict[tuple[str, str], tuple[float, int]] = {}
        self._docs: dict[str, tuple[float, int]] = {}
        self._mapping: dict[str, tuple[float, int | None]] = {}

    async def _mapping_ok(self, lexical: LexicalSearcher, principal: Principal, now: float) -> bool:
        """Whether the tenant's index carries ``ident`` in every document (or has none)."""
        hit = self._mapping.get(principal.tenant)
        if hit is None or now - hit[0] >= self._ttl:
            hit = (now, await lexical.mapping_version(principal))
            self._mapping[principal.tenant] = hit
        return hit[1] is None or hit[1] >= IDENT_MAPPING

    async def get(self, principal: Principal, idents: Iterable[str]) -> IdentifierStats | None:
        lexical = self._lexical
        if lexical is None:
            return None
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
        documents = docs_hit[1] if docs_hit and now - docs_hit[0] < self._docs_ttl else None
        if missing or documents is None:
            looked = [i for i in missing if parts(i)]
            try:
                if not await self._mapping_ok(lexical, principal, now):
                    return None
                total, counts = await lexical.documents_matching(
                    principal,
                    {str(n): ident_query(i) for n, i in enumerate(looked)},
                    count_all=documents is None,
                    timeout_s=self._timeout_s,
                )
            except RaglineError as exc:
                _log.warning(
                    "identifier frequency lookup failed",
                    extra={"fields": {"error": type(exc).__name__}},
                )
                return None
            if total is not None:
                documents = total
                self._docs[scope] = (now, total)
            fresh.update(dict.fromkeys(missing, 0))
            fresh.update({i: counts.get(str(n), 0) for n, i in enumerate(looked)})
            if len(self._df) + len(missing) > self._max:
                self._df.clear()
            for i in missing:
                self._df[(scope, i)] = (now, fresh[i])
        return IdentifierStats(documents=documents or 0, df=fresh)
