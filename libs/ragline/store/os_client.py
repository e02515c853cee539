"""The OpenSearch client factory and the translation of its errors into ragline errors.

Only opensearch-py speaks to OpenSearch (the local in-memory server and real clusters
alike); callers see ``BackendUnavailable``/``TransientError``/``PermanentError``.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opensearchpy import AsyncOpenSearch, AsyncTransport
from opensearchpy import exceptions as ose

from ragline.config import Settings
from ragline.errors import (
    BackendUnavailable,
    ConfigError,
    PermanentError,
    RaglineError,
    TransientError,
)

__all__ = [
    "RETRIABLE_STATUS",
    "client_options",
    "failover_options",
    "make_client",
    "os_errors",
    "tls_options",
    "tls_problem",
    "translate_os_error",
]

# throttled, or the cluster/gateway is temporarily unable to serve
RETRIABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


_AWS_EXTRA = "pip install 'ragline[aws]'"


def tls_options(settings: Settings) -> dict[str, Any]:
    """The TLS keyword arguments of an opensearch-py client (async or sync): the CA
    bundle, the client certificate and key, certificate checking. A file that is not there
    is a ``ConfigError`` naming the setting (at build, not at the first request)."""
    files = {
        "ca_certs": ("RAGLINE_OPENSEARCH_CA_CERTS", settings.opensearch_ca_certs),
        "client_cert": ("RAGLINE_OPENSEARCH_CLIENT_CERT", settings.opensearch_client_cert),
        "client_key": ("RAGLINE_OPENSEARCH_CLIENT_KEY", settings.opensearch_client_key),
    }
    out: dict[str, Any] = {"verify_certs": settings.opensearch_verify_certs}
    for key, (env, path) in files.items():
        if path is None:
            continue
        if not path.is_file():
            raise ConfigError(f"{env}={str(path)!r}: no such file")
        out[key] = str(path)
    if settings.opensearch_client_key is not None and settings.opensearch_client_cert is None:
        raise ConfigError("RAGLINE_OPENSEARCH_CLIENT_KEY is set without a client certificate")
    return out


def _aws_credentials(settings: Settings) -> Any:
    try:
        import botocore.session  # the `aws` extra
    except ImportError:
        raise ConfigError(
            f"RAGLINE_OPENSEARCH_AWS_REGION={settings.opensearch_aws_region!r}: request "
            f"signing needs the `aws` extra (botocore): {_AWS_EXTRA}"
        ) from None
    credentials = botocore.session.Session().get_credentials()
    if credentials is None:
        raise ConfigError(
            "RAGLINE_OPENSEARCH_AWS_REGION is set but no AWS credentials were found "
            "(environment, shared config/profile, container or instance role)"
        )
    return credentials


def client_options(settings: Settings, *, sync: bool = False) -> dict[str, Any]:
    """Keyword arguments of an opensearch-py client for ``settings``: TLS, and basic auth
    or AWS SigV4 request signing (``sync``: for ``OpenSearch``, else ``AsyncOpenSearch``)."""
    kwargs = tls_options(settings)
    if settings.opensearch_aws_region:
        if settings.opensearch_user:
            raise ConfigError("set RAGLINE_OPENSEARCH_USER or _AWS_REGION, not both")
        credentials = _aws_credentials(settings)
        region, service = settings.opensearch_aws_region, settings.opensearch_aws_service
        if sync:
            from opensearchpy import RequestsAWSV4SignerAuth, RequestsHttpConnection

            kwargs["http_auth"] = RequestsAWSV4SignerAuth(credentials, region, service)
            kwargs["connection_class"] = RequestsHttpConnection
        else:
            from opensearchpy import AsyncHttpConnection, AWSV4SignerAsyncAuth

            # the default aiohttp connection sends basic auth only; this one calls the signer
            kwargs["http_auth"] = AWSV4SignerAsyncAuth(credentials, region, service)
            kwargs["connection_class"] = AsyncHttpConnection
    elif settings.opensearch_user:
        password = settings.opensearch_password
        kwargs["http_auth"] = (
            settings.opensearch_user,
            password.get_secret_value() if password is not None else "",
        )
    return kwargs


def failover_options(settings: Settings) -> dict[str, Any]:
    """How a client treats the nodes of ``settings.opensearch_hosts`` (async and sync).

    Every node is in the pool (opensearch-py shuffles them and goes round-robin); a
    request whose connection fails (refused, reset: a dead node) marks that node dead for
    ``dead_timeout`` and is sent again to the next one, so each request tries every node
    at most once (``max_retries`` = nodes - 1; one URL: no retry, as before). Not moved:
    a timeout (the node may still be working on it, and the caller's deadline is already
    spent) and any HTTP status (``retry_on_status=()``: a 503 of a search that lost a
    shard would mark healthy nodes dead and fail the same way there; statuses are the
    caller's to retry, ``RETRIABLE_STATUS``). No sniffing: the publish addresses a node
    reports are pod IPs behind a Kubernetes Service, fail TLS host checks and are refused
    by Amazon OpenSearch; the configured list (or one Service URL) is the truth."""
    return {
        "max_retries": len(settings.opensearch_hosts) - 1,
        "retry_on_timeout": False,
        "retry_on_status": (),
    }


class _ClosingTransport(AsyncTransport):
    """opensearch-py's ``close`` closes only the nodes its pool holds as live: a node
    marked dead keeps its aiohttp session open (``Unclosed client session`` at exit)."""

    async def close(self) -> None:
        await super().close()
        for connection in getattr(self.connection_pool, "orig_connections", ()):
            await connection.close()  # idempotent for the live ones


def make_client(settings: Settings, *, timeout_s: float = 30.0) -> AsyncOpenSearch:
    """A client for every node of ``settings.opensearch_url`` (``failover_options``): TLS
    settings, basic auth when a user is configured, SigV4 signing when an AWS region is
    (``client_options``)."""
    kwargs: dict[str, Any] = {
        "timeout": timeout_s,
        **failover_options(settings),
        **client_options(settings),
    }
    from ragline.tracing import trace_opensearch

    client = AsyncOpenSearch(
        hosts=list(settings.opensearch_hosts), transport_class=_ClosingTransport, **kwargs
    )
    trace_opensearch(client)
    return client


def tls_problem(exc: BaseException) -> str | None:
    """What went wrong in a TLS handshake, if that is what ``exc`` is (certificate
    verification: the CA bundle; anything else: the protocol)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ssl.SSLCertVerificationError):
            # aiohttp's subclass keeps ssl's error as `certificate_error`
            why = getattr(getattr(cur, "certificate_error", cur), "verify_message", None)
            return (
                f"opensearch TLS: the node's certificate is not trusted "
                f"({why or 'certificate verify failed'}): check RAGLINE_OPENSEARCH_CA_CERTS"
            )
        if isinstance(cur, ssl.SSLError):
            return f"opensearch TLS handshake failed ({cur.reason or type(cur).__name__})"
        cur = cur.__cause__ or cur.__context__ or _wrapped(cur)
    return None


def _wrapped(exc: BaseException) -> BaseException | None:
    """opensearch-py keeps the driver's exception in ``info`` (ConnectionError)."""
    info = getattr(exc, "info", None)
    return info if isinstance(info, BaseException) else None


def translate_os_error(exc: BaseException) -> RaglineError:
    name = type(exc).__name__
    if (tls := tls_problem(exc)) is not None:
        # unavailable, not permanent: no document is to blame (the indexer waits, the
        # health check says why) and a fixed CA bundle or a renewed certificate heals it
        return BackendUnavailable(tls)
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
