"""The Kafka error adapter: every driver error becomes a ragline error, value-free."""

from __future__ import annotations

import pytest
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)

from ragline.errors import BackendUnavailable, PermanentError, TransientError
from ragline.runtime.kafka_errors import error_name, kafka_errors, translate_kafka_error

SECRET = "sk-live-0123456789"


@pytest.mark.parametrize(
    "exc",
    [
        KafkaConnectionError(f"cannot reach {SECRET}"),
        KafkaTimeoutError(SECRET),
        TopicAuthorizationFailedError(SECRET),
        UnknownTopicOrPartitionError(SECRET),
        ConnectionRefusedError(111, SECRET),
        TimeoutError(SECRET),
    ],
)
def test_driver_errors_become_backend_unavailable_without_their_message(
    exc: BaseException,
) -> None:
    with pytest.raises(BackendUnavailable) as info, kafka_errors("publish to doc.parsed"):
        raise exc
    assert isinstance(info.value, TransientError)
    assert info.value.__cause__ is exc
    assert SECRET not in str(info.value)
    name = type(exc).__name__
    if isinstance(exc, TopicAuthorizationFailedError | UnknownTopicOrPartitionError):
        assert str(info.value) == f"kafka: publish to doc.parsed failed ({name})"
    else:  # nobody answered: the words an operator greps for
        assert str(info.value) == (
            f"kafka: publish to doc.parsed failed: broker unreachable ({name})"
        )


def test_ragline_errors_and_others_pass_through() -> None:
    mine = PermanentError("claim missing")
    assert translate_kafka_error(mine, "read") is mine
    with pytest.raises(PermanentError), kafka_errors("read"):
        raise mine
    # not a driver error: the caller's bug stays visible
    with pytest.raises(KeyError), kafka_errors("read"):
        raise KeyError("x")


def test_error_codes_are_named() -> None:
    assert error_name(36) == "TopicAlreadyExistsError"
    assert error_name(3) == "UnknownTopicOrPartitionError"
