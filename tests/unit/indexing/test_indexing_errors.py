"""Driver errors become ragline errors at the adapters; bulk item failures are classified."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opensearchpy import exceptions as ose
from psycopg import errors as pg
from psycopg_pool import PoolTimeout

from ragline.errors import BackendUnavailable, PermanentError, TransientError
from ragline.store.os_bulk import IndexMissing, item_failures
from ragline.store.os_client import RETRIABLE_STATUS, translate_os_error
from ragline.store.pg_errors import pg_errors, translate_pg_error


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (pg.SerializationFailure(), TransientError),
        (pg.DeadlockDetected(), TransientError),
        (pg.AdminShutdown(), TransientError),
        (pg.OperationalError(), BackendUnavailable),
        (PoolTimeout(), BackendUnavailable),
        (pg.UniqueViolation(), PermanentError),
        (pg.UndefinedTable(), PermanentError),
        (pg.InvalidTextRepresentation(), PermanentError),
    ],
)
def test_pg_errors(exc: Exception, expected: type) -> None:
    assert type(translate_pg_error(exc)) is expected
    with pytest.raises(expected), pg_errors():
        raise exc


def test_os_errors() -> None:
    assert isinstance(
        translate_os_error(ose.ConnectionError("N/A", "refused", None)), BackendUnavailable
    )
    assert isinstance(
        translate_os_error(ose.ConnectionTimeout("N/A", "t", None)), BackendUnavailable
    )
    assert type(translate_os_error(ose.TransportError(429, "throttled", {}))) is TransientError
    assert type(translate_os_error(ose.TransportError(503, "unavailable", {}))) is TransientError
    assert type(translate_os_error(ose.RequestError(400, "mapper_parsing", {}))) is PermanentError
    assert type(translate_os_error(ose.NotFoundError(404, "missing", {}))) is PermanentError


def _resp(items: list[tuple[str, int, str]]) -> dict:
    out = []
    for op, status, kind in items:
        entry = {"status": status}
        if status >= 300:
            entry["error"] = {"type": kind}
        out.append({op: entry})
    return {"errors": any(s >= 300 for _, s, _ in items), "items": out}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["index", "delete"]),
            st.sampled_from([200, 201, 404, 400, 429, 503]),
            st.sampled_from(["x", "mapper_parsing_exception"]),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_bulk_items_classified(items: list[tuple[str, int, str]]) -> None:
    """Per item: retriable statuses are sent again, other failures are rejected with a
    reason that names the status and type only; successes and deleted-absent are fine."""
    retry, rejected = item_failures(_resp(items))
    for pos, (op, status, kind) in enumerate(items):
        ok = status < 300 or (status == 404 and op == "delete")
        if ok:
            assert pos not in retry and pos not in rejected
        elif status in RETRIABLE_STATUS:
            assert pos in retry and pos not in rejected
        else:
            assert rejected[pos] == f"{status} {kind}" and pos not in retry


def test_missing_alias_is_its_own_error() -> None:
    with pytest.raises(IndexMissing):
        item_failures(_resp([("index", 404, "index_not_found_exception")]))
