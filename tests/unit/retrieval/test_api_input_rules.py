"""Issue 14, pure logic: the query API's text and document-id rules agree with the
intake contract and with their JSON Schema patterns; size caps answer before the app;
the query service's OpenSearch credential."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from ragline.config import Settings
from ragline.events import _DOCUMENT_ID_RE
from ragline.retrieval.settings import QuerySettings
from ragline.runtime.http_limits import SizeLimits
from ragline_client.text_rules import (
    DOCUMENT_ID_PATTERN,
    NO_NUL_PATTERN,
    NON_BLANK_PATTERN,
    is_blank,
    unsafe_reason,
    valid_document_id,
)
from services.query.requests import legacy_status_id, query_opensearch_settings

_INTAKE = re.compile(_DOCUMENT_ID_RE)


@settings(max_examples=400)
@given(st.from_regex(_DOCUMENT_ID_RE, fullmatch=True) | st.text(max_size=40))
def test_every_storable_intake_id_is_addressable(doc_id: str) -> None:
    """The query API accepts exactly the ids the intake contract accepts (full match),
    less those Postgres cannot store (NUL)."""
    intake = _INTAKE.fullmatch(doc_id) is not None and "\x00" not in doc_id
    assert valid_document_id(doc_id) == intake, repr(doc_id)


@pytest.mark.parametrize(
    "doc_id", ["pz:a\n", "pz:a\r\n", "pz:\x00", "Pz:a", "pz: a", "pz", ":a", "pz:" + "x" * 513]
)
def test_invalid_document_ids(doc_id: str) -> None:
    assert not valid_document_id(doc_id)


def test_legacy_status_suffix() -> None:
    assert legacy_status_id("pz:a/status") == "pz:a"
    assert legacy_status_id("pz:a/status/status") == "pz:a/status"
    assert legacy_status_id("pz:a") is None
    assert legacy_status_id("/status") is None  # the rest is no id


@settings(max_examples=300)
@given(st.text(max_size=30))
def test_schema_patterns_say_what_the_validators_do(text: str) -> None:
    no_nul = re.fullmatch(NO_NUL_PATTERN.replace("\\u0000", "\\x00"), text) is not None
    non_blank = re.fullmatch(NON_BLANK_PATTERN.replace("\\u0000", "\\x00"), text) is not None
    assert no_nul == ("\x00" not in text)
    assert non_blank == (no_nul and not is_blank(text))
    assert re.fullmatch(DOCUMENT_ID_PATTERN, text) is not None or not valid_document_id(text)


@pytest.mark.parametrize("text", ["a\x00", "\ud800", "ok\udfff", "\udbff\udc00"])
def test_unsafe_text(text: str) -> None:
    assert unsafe_reason(text) is not None


def _run(
    app: Any, *, headers: list[tuple[bytes, bytes]], chunks: list[bytes]
) -> tuple[int, bytes, bool]:
    reached: list[bytes] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        reached.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    sent: list[dict[str, Any]] = []
    queue = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]

    async def receive() -> dict[str, Any]:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(msg: dict[str, Any]) -> None:
        sent.append(msg)

    mw = SizeLimits(inner, max_body_bytes=100, max_header_bytes=2048)
    scope = {"type": "http", "path": "/v1/search", "headers": headers}
    asyncio.run(mw(scope, receive, send))
    status = sent[0]["status"]
    return status, sent[-1]["body"], bool(reached)


def test_size_caps_answer_before_the_app() -> None:
    assert _run(None, headers=[], chunks=[b"x" * 100]) == (200, b"ok", True)
    status, body, reached = _run(None, headers=[(b"content-length", b"101")], chunks=[b"x"])
    assert (status, reached) == (413, False) and json.loads(body)["status"] == 413
    # no Content-Length (chunked): counted while streaming
    status, _, reached = _run(None, headers=[], chunks=[b"x" * 60, b"x" * 60])
    assert (status, reached) == (413, False)
    status, _, reached = _run(None, headers=[(b"x-pad", b"y" * 3000)], chunks=[b""])
    assert (status, reached) == (431, False)
    status, _, reached = _run(None, headers=[(b"content-length", b"1e3")], chunks=[b""])
    assert (status, reached) == (400, False)


def test_query_service_opensearch_credential() -> None:
    base = Settings(opensearch_user="pipeline", opensearch_password=SecretStr("writer"))
    same = query_opensearch_settings(
        base, QuerySettings.from_fields(jwt_secret=SecretStr("x" * 32))
    )
    assert same.opensearch_user == "pipeline"
    qs = QuerySettings.from_fields(
        jwt_secret=SecretStr("x" * 32),
        opensearch_user="reader",
        opensearch_password=SecretStr("read-only"),
    )
    own = query_opensearch_settings(base, qs)
    assert own.opensearch_user == "reader"
    assert own.opensearch_password is not None
    assert own.opensearch_password.get_secret_value() == "read-only"
    assert base.opensearch_user == "pipeline"  # the pipeline's settings are untouched
