"""ragline-client: the query API's own models, sync and async clients, signed webhooks.

    from ragline_client import Ragline
    with Ragline("http://localhost:8080", token=get_token) as rag:
        for r in rag.search("how do I rotate keys", top_k=5).results:
            print(r.citation.title, r.flags.injection_suspect)

Framework retrievers are optional extras: ``ragline_client.langchain`` (``[langchain]``)
and ``ragline_client.llamaindex`` (``[llamaindex]``). Guide: docs/clients.md.
"""

from ragline_client.auth import RefreshingToken, StaticToken, TokenProvider
from ragline_client.client import AsyncRagline, Ragline, search_request
from ragline_client.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    RaglineClientError,
    RateLimited,
    ResponseShapeError,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
)
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
from ragline_client.retry import RetryPolicy
from ragline_client.webhook import AsyncChangeWebhook, ChangeWebhook, WebhookReceipt

__version__ = "0.1.0"

__all__ = [
    "AbstainEvidence",
    "ApiError",
    "AsyncChangeWebhook",
    "AsyncRagline",
    "BadRequest",
    "ChangeWebhook",
    "Citation",
    "DocumentResponse",
    "DocumentStatusResponse",
    "Flags",
    "Forbidden",
    "NotFound",
    "PayloadTooLarge",
    "Problem",
    "Ragline",
    "RaglineClientError",
    "RateLimited",
    "RefreshingToken",
    "ResponseShapeError",
    "Result",
    "RetryPolicy",
    "Scores",
    "SearchFilters",
    "SearchRequest",
    "SearchResponse",
    "ServerError",
    "StaticToken",
    "TokenProvider",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "VersionScope",
    "WebhookReceipt",
    "__version__",
    "search_request",
]
