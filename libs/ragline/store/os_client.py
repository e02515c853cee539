"""The OpenSearch client factory and the translation of its errors into ragline errors.

Only opensearch-py speaks to OpenSearch (the local in-memory server and real clusters
alike); callers see ``BackendUnavailable``/``TransientError``/``PermanentError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opensearchpy import AsyncOpenSearch
from opensearchpy import exceptions as ose

from ragline.config import Settings
from ragline.errors import BackendUnavailable, PermanentError, RaglineError, TransientError

__all__ = ["RETRIABLE_STATUS", "make_client", "os_errors", "translate_os_error"]

# throttled, or the cluster/gateway is temporarily unable to serve
RETRIABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def make_client(settings: Settings, *, timeout_s: float = 30.0) -> AsyncOpenSearch:
    """A client for ``settings.opensearch_url`` (basic auth when a user is configured)."""
    kwargs: dict[str, Any] = {"timeout": timeout_s, "max_retries": 0}
    if settings.opensearch_user:
        password = settings.opensearch_password
        kwargs["http_auth"] = (
            settings.opensearch_user,
            password.get_secret_value() if password is not None else "",
        )
    from ragline.tracing import trace_opensearch

    client = AsyncOpenSearch(hosts=[settings.opensearch_url], **kwargs)
    trace_opensearch(client)
    return client


def translate_os_error(exc: BaseException) -> RaglineError:
    name = type(exc).__name__
    if isinstance(exc, ose.ConnectionError):  # includes ConnectionTimeout
        return BackendUnavailable(f"opensearch unreachable: {name}")
    if isinstance(exc, ose.TransportError):
        status = exc.status_code
        if isinstance(status, int) and status in RETRIABLE_STATUS:
            return TransientError(f"opensearch {status} {exc.error}")
        if not isinstance(status, int):  # 'N/A': no HTTP answer at all
            return BackendUnavailable(f"opensearch transport failure: {name}")
        return PermanentError(f"opensearch {status} {exc.error}")
    if isinstance(exc, OSError | TimeoutError):
        return BackendUnavailable(f"opensearch unreachable: {name}")
    return PermanentError(f"opensearch client error: {name}")


@contextmanager
def os_errors() -> Iterator[None]:
    """``with os_errors(): await client...`` re-raises driver errors as ragline errors."""
    try:
        yield
    except (ose.OpenSearchException, OSError, TimeoutError) as exc:
        raise translate_os_error(exc) from exc
