"""Translate aiokafka errors into ragline errors, so callers never catch driver types.

The Kafka counterpart of ``store.pg_errors``: one adapter, typed, no data in messages
(the action and the error class, never a record, key or header). Every aiokafka error
(and a socket error or timeout under it) is ``BackendUnavailable``, a ``TransientError``:
at each call site the caller bounds the retries, and a broker that keeps refusing is the
platform's failure, not the message's (the stage runner then stops without committing,
so nothing is lost). A ragline error raised inside (the claim-check store) passes as is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from aiokafka.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    RequestTimedOutError,
    for_code,
)

from ragline.errors import BackendUnavailable, RaglineError

__all__ = ["BROKER_UNREACHABLE", "error_name", "kafka_errors", "translate_kafka_error"]

_DRIVER_ERRORS = (KafkaError, OSError, TimeoutError)
# the words an operator greps for (health, `ragline lag`, logs) when no broker answers
BROKER_UNREACHABLE = "broker unreachable"
_UNREACHABLE = (
    KafkaConnectionError,
    NoBrokersAvailable,
    KafkaTimeoutError,
    RequestTimedOutError,
    OSError,
    TimeoutError,
)


def translate_kafka_error(exc: BaseException, action: str) -> RaglineError:
    """The ragline error for an aiokafka exception during ``action`` (class name only);
    a connection failure or timeout says ``broker unreachable``."""
    if isinstance(exc, RaglineError):
        return exc
    name = type(exc).__name__
    if isinstance(exc, _UNREACHABLE):
        return BackendUnavailable(f"kafka: {action} failed: {BROKER_UNREACHABLE} ({name})")
    return BackendUnavailable(f"kafka: {action} failed ({name})")


@contextmanager
def kafka_errors(action: str) -> Iterator[None]:
    """``with kafka_errors("publish to doc.parsed"): ...`` re-raises aiokafka errors as
    ragline errors."""
    try:
        yield
    except _DRIVER_ERRORS as exc:
        raise translate_kafka_error(exc, action) from exc


def error_name(code: int) -> str:
    """The name of a Kafka protocol error code (a per-topic result of an admin call)."""
    return str(for_code(code).__name__)
