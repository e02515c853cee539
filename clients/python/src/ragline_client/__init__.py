"""ragline-client: the query API's models and clients (docs/clients.md)."""

from ragline_client.models import (
    AbstainEvidence,
    Citation,
    DocumentResponse,
    DocumentStatusResponse,
    Flags,
    Problem,
    Result,
    Scores,
    SearchFilters,
    SearchRequest,
    SearchResponse,
    VersionScope,
)

__all__ = [
    "AbstainEvidence",
    "Citation",
    "DocumentResponse",
    "DocumentStatusResponse",
    "Flags",
    "Problem",
    "Result",
    "Scores",
    "SearchFilters",
    "SearchRequest",
    "SearchResponse",
    "VersionScope",
]
