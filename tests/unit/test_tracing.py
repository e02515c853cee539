from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragline import tracing
from ragline.config import TracingSettings
from ragline.tracing import child_traceparent, new_traceparent, valid_traceparent


def test_child_keeps_trace_id_and_changes_span() -> None:
    parent = new_traceparent()
    child = child_traceparent(parent)
    assert valid_traceparent(child)
    assert child.split("-")[1] == parent.split("-")[1]
    assert child.split("-")[2] != parent.split("-")[2]


def test_malformed_parent_starts_a_new_trace() -> None:
    assert valid_traceparent(child_traceparent("garbage"))
    assert valid_traceparent(child_traceparent(None))


# ----------------------------------------------------------------- OpenTelemetry spans


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    tracing.use_provider(provider)
    yield exp
    tracing.use_provider(None)


def test_off_by_default_costs_nothing() -> None:
    assert not tracing.tracing_on()
    assert not tracing.configure_tracing("parser", TracingSettings())
    with tracing.span("x") as s:
        assert s is None
    assert tracing.start_span("x") is None
    assert tracing.pg_cursor_factory() is None
    app = object()
    assert tracing.trace_asgi(app) is app
    assert tracing.log_ids() == {}
    parent = new_traceparent()
    child = tracing.current_traceparent(parent)
    assert child.split("-")[1] == parent.split("-")[1] and child != parent


def test_the_published_traceparent_is_the_current_span(exporter: InMemorySpanExporter) -> None:
    parent = new_traceparent()
    with tracing.span("hop", kind="consumer", parent=tracing.remote_context(parent)) as s:
        tp = tracing.current_traceparent(parent)
        sc = s.get_span_context()
    assert tp == f"00-{sc.trace_id:032x}-{sc.span_id:016x}-01"
    assert tp.split("-")[1] == parent.split("-")[1]  # the producer's trace continues
    (done,) = exporter.get_finished_spans()
    assert f"{done.parent.span_id:016x}" == parent.split("-")[2]


def test_errors_mark_the_span(exporter: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), tracing.span("boom"):
        raise ValueError("x")
    (done,) = exporter.get_finished_spans()
    assert done.status.status_code.name == "ERROR"


@pytest.mark.parametrize(
    "bad", [None, "", "garbage", "00-" + "0" * 32 + "-" + "1" * 16 + "-01", "00-zz\x00-\ud800-01"]
)
def test_hostile_traceparents_start_a_new_trace(bad: str | None) -> None:
    assert tracing.remote_context(bad) is None
    assert valid_traceparent(child_traceparent(bad))


def test_sql_operation_names_never_carry_the_statement() -> None:
    from psycopg import sql

    assert tracing._sql_operation("select * from t where secret = 'x'", None) == "SELECT"
    assert tracing._sql_operation(b"  INSERT INTO t VALUES (1)", None) == "INSERT"
    assert tracing._sql_operation("", None) == "SQL"
    assert tracing._sql_operation(sql.SQL("DELETE FROM {}").format(sql.Identifier("t")), None) in {
        "DELETE",
        "SQL",
    }
