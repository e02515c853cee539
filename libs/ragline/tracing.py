"""W3C trace context carried in Kafka headers (``traceparent``), and OpenTelemetry spans
(off by default; docs/operations.md "Tracing")."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ragline.config import TracingSettings

__all__ = [
    "TRACE_HEADER",
    "child_traceparent",
    "configure_tracing",
    "context_of",
    "current_traceparent",
    "end_span",
    "log_ids",
    "new_traceparent",
    "pg_cursor_factory",
    "remote_context",
    "span",
    "start_span",
    "trace_asgi",
    "trace_opensearch",
    "tracing_on",
    "use_provider",
    "use_span",
    "valid_traceparent",
]

TRACE_HEADER = "traceparent"
_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def new_traceparent() -> str:
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def valid_traceparent(value: str | None) -> bool:
    return bool(value and _RE.fullmatch(value)) and (value or "").split("-")[1] != "0" * 32


def child_traceparent(parent: str | None) -> str:
    """Same trace id, new span id; a fresh trace when the parent is missing or malformed."""
    m = _RE.fullmatch(parent or "")
    if not m or not valid_traceparent(parent):
        return new_traceparent()
    return f"00-{m.group(1)}-{secrets.token_hex(8)}-{m.group(3)}"


# --------------------------------------------------------------------------- spans
# OpenTelemetry spans: per Kafka hop (consume -> handle -> publish, the consume span a
# child of the producer's span and linked to it), per query stage and per backend call.
# Off by default (RAGLINE_TRACING_ENABLED): then nothing is created at all, not even a
# no-op span; on, spans go to OTLP/HTTP (RAGLINE_TRACING_OTLP_ENDPOINT) or to whatever
# provider a test installed (``use_provider``).

_state: dict[str, Any] = {"on": False}


def tracing_on() -> bool:
    return bool(_state["on"])


def configure_tracing(service: str, settings: TracingSettings) -> bool:
    """Install the OTLP exporter when tracing is enabled; returns whether it is on."""
    ts = settings
    if not ts.enabled:
        return tracing_on()
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": f"ragline-{service}", "service.namespace": "ragline"}
        ),
        sampler=ParentBased(TraceIdRatioBased(ts.sample_ratio)),
    )
    exporter = (
        OTLPSpanExporter(endpoint=ts.otlp_endpoint) if ts.otlp_endpoint else OTLPSpanExporter()
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _state["on"] = True
    return True


def use_provider(provider: Any | None) -> None:
    """Tests: send spans to ``provider`` (an SDK TracerProvider); None turns tracing off."""
    _state["provider"] = provider
    _state["on"] = provider is not None


def _tracer() -> Any:
    from opentelemetry import trace

    provider = _state.get("provider")
    if provider is not None:
        return provider.get_tracer("ragline")
    return trace.get_tracer("ragline")


def remote_context(traceparent: str | None) -> Any:
    """The OpenTelemetry context of a W3C ``traceparent`` (None when absent/invalid)."""
    if not valid_traceparent(traceparent):
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({TRACE_HEADER: str(traceparent)})


@contextmanager
def span(
    name: str,
    *,
    kind: str = "internal",
    parent: Any = None,
    links: Sequence[Any] = (),
    attributes: Mapping[str, Any] | None = None,
) -> Iterator[Any]:
    """A span (current within the block) when tracing is on; else nothing, at no cost.
    ``parent``: an OpenTelemetry context (``remote_context``, ``context_of``) or None
    for the current one; ``links``: contexts the span is linked to."""
    s = start_span(name, kind=kind, parent=parent, links=links, attributes=attributes)
    if s is None:
        yield None
        return
    error: BaseException | None = None
    try:
        with use_span(s):
            yield s
    except BaseException as exc:
        error = exc
        raise
    finally:
        end_span(s, error)


def context_of(s: Any) -> Any:
    """The context whose current span is ``s`` (for children started elsewhere)."""
    if s is None:
        return None
    from opentelemetry import trace

    return trace.set_span_in_context(s)


def current_traceparent(fallback_parent: str | None) -> str:
    """The ``traceparent`` of the current span (what a published event carries, so the
    consumer's span becomes its child); without a recording span, a child of
    ``fallback_parent`` as before tracing existed."""
    if _state["on"]:
        from opentelemetry import trace

        sc = trace.get_current_span().get_span_context()
        if sc.is_valid:
            return f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{int(sc.trace_flags):02x}"
    return child_traceparent(fallback_parent)


def log_ids() -> dict[str, str]:
    """``trace_id``/``span_id`` of the current span for log lines ({} when none)."""
    if not _state["on"]:
        return {}
    from opentelemetry import trace

    sc = trace.get_current_span().get_span_context()
    if not sc.is_valid:
        return {}
    return {"trace_id": f"{sc.trace_id:032x}", "span_id": f"{sc.span_id:016x}"}


def start_span(
    name: str,
    *,
    kind: str = "internal",
    parent: Any = None,
    links: Sequence[Any] = (),
    attributes: Mapping[str, Any] | None = None,
) -> Any:
    """A span that is not made current (several records of a batch each have one); end
    it with ``end_span``. None when tracing is off."""
    if not _state["on"]:
        return None
    from opentelemetry import trace
    from opentelemetry.trace import Link

    span_links = []
    for ctx in links:
        sc = trace.get_current_span(ctx).get_span_context() if ctx is not None else None
        if sc is not None and sc.is_valid:
            span_links.append(Link(sc))
    return _tracer().start_span(
        name, context=parent, kind=_kind(kind), links=span_links, attributes=dict(attributes or {})
    )


def end_span(s: Any, error: BaseException | None = None) -> None:
    if s is None:
        return
    if error is not None:
        from opentelemetry.trace import Status, StatusCode

        s.record_exception(error)
        s.set_status(Status(StatusCode.ERROR, type(error).__name__))
    s.end()


@contextmanager
def use_span(s: Any) -> Iterator[None]:
    """Make ``s`` (from ``start_span``) the current span within the block."""
    if s is None:
        yield
        return
    from opentelemetry import trace

    with trace.use_span(s, end_on_exit=False):
        yield


def _kind(kind: str) -> Any:
    from opentelemetry.trace import SpanKind

    return {
        "internal": SpanKind.INTERNAL,
        "consumer": SpanKind.CONSUMER,
        "producer": SpanKind.PRODUCER,
        "client": SpanKind.CLIENT,
        "server": SpanKind.SERVER,
    }[kind]


# --------------------------------------------------------------------------- backends


def _sql_operation(query: Any, context: Any) -> str:
    if isinstance(query, bytes):
        query = query.decode("utf-8", "replace")
    if not isinstance(query, str):
        try:
            query = query.as_string(context)
        except Exception:  # a composition the context cannot render: name it only
            return "SQL"
    words = str(query).split(None, 1)
    return words[0].upper()[:16] if words else "SQL"


def pg_cursor_factory() -> Any:
    """A psycopg async cursor class that records one client span per statement (the
    operation only, never the SQL text or parameters); None when tracing is off, so
    pools keep psycopg's own cursor at no cost."""
    if not _state["on"]:
        return None
    import psycopg

    class TracedAsyncCursor(psycopg.AsyncCursor[Any]):
        async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            op = _sql_operation(query, self)
            with span(
                f"postgres {op}",
                kind="client",
                attributes={"db.system.name": "postgresql", "db.operation.name": op},
            ):
                return await super().execute(query, params, **kwargs)

        async def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
            op = _sql_operation(query, self)
            with span(
                f"postgres {op} batch",
                kind="client",
                attributes={"db.system.name": "postgresql", "db.operation.name": op},
            ):
                await super().executemany(query, params_seq, **kwargs)

    return TracedAsyncCursor


def trace_opensearch(client: Any) -> None:
    """Record one client span per OpenSearch request of ``client`` (method and endpoint
    kind, e.g. ``_bulk``, ``_search``; never index names, ids or bodies). A no-op when
    tracing is off."""
    if not _state["on"]:
        return
    transport = client.transport
    original = transport.perform_request

    async def perform_request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        parts = [p for p in url.split("?", 1)[0].split("/") if p]
        op = next((p for p in reversed(parts) if p.startswith("_")), "document" if parts else "/")
        with span(
            f"opensearch {method} {op}",
            kind="client",
            attributes={
                "db.system.name": "opensearch",
                "db.operation.name": op,
                "http.request.method": method,
            },
        ):
            return await original(method, url, *args, **kwargs)

    transport.perform_request = perform_request


def trace_asgi(app: Any) -> Any:
    """``app`` wrapped so every HTTP request is a server span, a child of the caller's
    ``traceparent`` (the query stages' spans nest under it); ``app`` itself when
    tracing is off."""
    if not _state["on"]:
        return app

    async def traced(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())}
        route = str(scope.get("path", ""))
        name = route if route in ("/v1/search", "/healthz", "/readyz", "/metrics") else "request"
        with span(
            f"{scope.get('method', 'GET')} {name}",
            kind="server",
            parent=remote_context(headers.get(TRACE_HEADER)),
            attributes={"http.request.method": str(scope.get("method", ""))},
        ):
            await app(scope, receive, send)

    return traced
