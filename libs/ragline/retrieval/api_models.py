"""Request and response models of the query API: re-exported from ``ragline_client.models``.

The one definition lives in the client distribution (clients/python), so the server's
OpenAPI document and what downstream products parse cannot drift apart. Extend the models
there, only additively.
"""

from __future__ import annotations

from ragline_client.models import (
    AbstainEvidence,
    CacheState,
    Citation,
    DocumentResponse,
    DocumentStatusResponse,
    Flags,
    Mode,
    Problem,
    Result,
    Scores,
    SearchRequest,
    SearchResponse,
    VersionScope,
)

__all__ = [
    "AbstainEvidence",
    "CacheState",
    "Citation",
    "DocumentResponse",
    "DocumentStatusResponse",
    "Flags",
    "Mode",
    "Problem",
    "Result",
    "Scores",
    "SearchRequest",
    "SearchResponse",
    "VersionScope",
]
