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

from aiokafka.errors import KafkaError, for_code

from ragline.errors import BackendUnavailable, RaglineError

__all__ = ["error_name", "kafka_errors", "translate_kafka_error"]

_DRIVER_ERRORS = (KafkaError, OSError, TimeoutError)


def translate_kafka_error(exc: BaseException, action: str) -> RaglineError:
    """The ragline error for an aiokafka exception during ``action`` (class name only)."""
    if isinstance(exc, RaglineError):
        return exc
    return BackendUnavailable(f"kafka: {action} failed ({type(exc).__name__})")


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
