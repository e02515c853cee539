from __future__ import annotations

from ragline.runtime.tracing import child_traceparent, new_traceparent, valid_traceparent


def test_child_keeps_trace_id_and_changes_span() -> None:
    parent = new_traceparent()
    child = child_traceparent(parent)
    assert valid_traceparent(child)
    assert child.split("-")[1] == parent.split("-")[1]
    assert child.split("-")[2] != parent.split("-")[2]


def test_malformed_parent_starts_a_new_trace() -> None:
    assert valid_traceparent(child_traceparent("garbage"))
    assert valid_traceparent(child_traceparent(None))
