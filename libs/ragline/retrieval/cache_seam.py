"""The seam for the permission-scoped answer cache (issue 7).

The search flow asks ``ResultCache.lookup`` after intent resolution and before any
retrieval, and calls ``store`` after a full search. The key material it gets already
contains the principal's scope (tenant + sorted groups), the resolved filters and the
query vector, so an implementation can never serve an entry across scopes by accident.
The implementation is ``ragline.cache.PgResultCache``; ``NoCache`` answers "off" (the
kill switch ``RAGLINE_CACHE_ENABLED=false``, or a service built without a cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ragline.auth.principal import Principal

if TYPE_CHECKING:
    from ragline.retrieval.api_models import SearchResponse

__all__ = ["CacheKey", "NoCache", "ResultCache"]


@dataclass(frozen=True, kw_only=True)
class CacheKey:
    principal: Principal
    queries: tuple[str, ...]
    vectors: tuple[npt.NDArray[np.float32], ...]  # empty in lexical mode
    request: dict[str, Any]  # normalized request: mode, filters, scope, top_k, switches

    @property
    def scope(self) -> str:
        return self.principal.scope_key


class ResultCache(Protocol):
    @property
    def state(self) -> Literal["on", "off"]: ...

    async def lookup(self, key: CacheKey) -> SearchResponse | None: ...

    async def store(self, key: CacheKey, response: SearchResponse) -> None: ...


class NoCache:
    @property
    def state(self) -> Literal["on", "off"]:
        return "off"

    async def lookup(self, key: CacheKey) -> SearchResponse | None:
        return None

    async def store(self, key: CacheKey, response: SearchResponse) -> None:
        return None
