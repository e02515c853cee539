"""Translate psycopg errors into ragline errors, so callers never catch driver types.

Connection loss, pool exhaustion, timeouts, serialization failures and deadlocks are
worth a retry (``TransientError``/``BackendUnavailable``); constraint, data and SQL
errors will fail again the same way (``PermanentError``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pg
from psycopg_pool import PoolTimeout, TooManyRequests

from ragline.errors import BackendUnavailable, PermanentError, RaglineError, TransientError

__all__ = ["pg_errors", "translate_pg_error"]

_RETRIABLE = (
    pg.SerializationFailure,
    pg.DeadlockDetected,
    pg.LockNotAvailable,
    pg.QueryCanceled,
    pg.TooManyConnections,
    pg.AdminShutdown,
    pg.CannotConnectNow,
)


def translate_pg_error(exc: BaseException) -> RaglineError:
    """The ragline error for a psycopg exception (the SQLSTATE class, never the data)."""
    sqlstate = getattr(exc, "sqlstate", None) or "-"
    name = type(exc).__name__
    if isinstance(exc, PoolTimeout):
        return BackendUnavailable("postgres pool exhausted or unreachable")
    if isinstance(exc, TooManyRequests):
        return BackendUnavailable("postgres pool: too many waiting requests")
    if isinstance(exc, _RETRIABLE):
        return TransientError(f"postgres {name} ({sqlstate})")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return BackendUnavailable(f"postgres unavailable: {name} ({sqlstate})")
    if isinstance(exc, psycopg.InternalError):
        return TransientError(f"postgres internal error {name} ({sqlstate})")
    return PermanentError(f"postgres {name} ({sqlstate})")


@contextmanager
def pg_errors() -> Iterator[None]:
    """``with pg_errors(): ...`` re-raises psycopg errors as ragline errors."""
    try:
        yield
    except psycopg.Error as exc:
        raise translate_pg_error(exc) from exc
    except (PoolTimeout, TooManyRequests) as exc:  # pool errors: not psycopg.Errors
        raise translate_pg_error(exc) from exc
