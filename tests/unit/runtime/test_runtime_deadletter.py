"""Dead-letter error texts never carry the input's values."""

from __future__ import annotations

import base64

import pytest
from pydantic import TypeAdapter, ValidationError

from ragline.errors import QuarantineError
from ragline.events import SourceChange
from ragline.runtime.deadletter import dead_letter, safe_error_message

SECRET = "AKIAIOSFODNN7EXAMPLE-supersecret"


def test_validation_errors_lose_their_input_values() -> None:
    with pytest.raises(ValidationError) as info:
        TypeAdapter(SourceChange).validate_python(
            {
                "event_type": "source.delete",
                "tenant_id": SECRET,
                "document_id": "s:x",
                "source_seq": 1,
            }
        )
    msg = safe_error_message(info.value)
    assert "tenant_id" in msg and "string_pattern_mismatch" in msg
    assert SECRET not in msg


def test_foreign_exception_messages_are_withheld() -> None:
    msg = safe_error_message(KeyError(SECRET))
    assert SECRET not in msg and "KeyError" in msg


def test_dead_letter_keeps_original_and_reason() -> None:
    dl = dead_letter(
        stage="parser",
        topic="doc.fetched",
        partition=2,
        offset=7,
        key=b"s:x",
        value=b"raw",
        headers={"traceparent": "t"},
        exc=QuarantineError("corrupt_pdf", "xref table unreadable"),
        attempts=1,
    )
    assert base64.b64decode(dl.original_b64) == b"raw"
    assert dl.error_class == "QuarantineError"
    assert dl.error_message == "corrupt_pdf: xref table unreadable"
    assert (dl.topic, dl.partition, dl.offset, dl.key) == ("doc.fetched", 2, 7, "s:x")
