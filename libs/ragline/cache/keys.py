"""The stored form of a ``CacheKey``: what a cache row is looked up by.

Scope (tenant + sorted groups) and request (mode, filters, version scope, top_k, switches,
the calendar day) are exact; the query is matched exactly (normalized) or, with a single
query vector, by cosine similarity within the same lexical guard signature. The index
version (embedding model + revision + epoch) keeps vectors of another model apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date

import numpy as np
import numpy.typing as npt

from ragline.cache.guard import normalize_query, signature_hash
from ragline.hashing import sha256_hex
from ragline.retrieval.cache_seam import CacheKey

__all__ = ["EntryKey", "entry_key"]


@dataclass(frozen=True, kw_only=True)
class EntryKey:
    tenant_id: str
    groups: tuple[str, ...]
    scope_hash: str
    request_hash: str
    index_version: str
    guard_hash: str
    query_hash: str
    mode: str
    vector: npt.NDArray[np.float32] | None  # set only for a single-vector (semantic) key

    @property
    def semantic(self) -> bool:
        return self.vector is not None

    @property
    def identity(self) -> tuple[str, ...]:
        """Everything but the vector (a function of the query texts, which query_hash
        already covers); dataclass equality would compare numpy arrays."""
        return (
            self.tenant_id,
            self.scope_hash,
            self.request_hash,
            self.index_version,
            self.guard_hash,
            self.query_hash,
            self.mode,
        )


def _canonical(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _unit(v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32] | None:
    arr = np.asarray(v, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(arr))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return (arr / norm).astype(np.float32)


def entry_key(key: CacheKey, *, index_version: str, today: date) -> EntryKey:
    """Derive the row key. ``today`` is part of the request: "current" answers depend on
    effective/expiry dates, so an entry never outlives its calendar day."""
    p = key.principal
    request = dict(key.request)
    mode = str(request.get("mode", "hybrid"))
    request_hash = sha256_hex(_canonical({"request": request, "day": today.isoformat()}))
    normalized = [normalize_query(q) for q in key.queries]
    vector = _unit(key.vectors[0]) if len(key.vectors) == 1 and mode != "lexical" else None
    return EntryKey(
        tenant_id=p.tenant,
        groups=tuple(p.groups),
        scope_hash=sha256_hex(key.scope),
        request_hash=request_hash,
        index_version=index_version,
        guard_hash=signature_hash(key.queries),
        query_hash=sha256_hex(_canonical(normalized)),
        mode=mode,
        vector=vector,
    )
