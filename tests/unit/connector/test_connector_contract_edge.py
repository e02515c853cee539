"""The source contract refuses at the edge what Postgres cannot store (issue 12, defect 4):
NUL, lone surrogates, a source_seq beyond bigint. The webhook answers 422 with the field;
the same validator dead-letters such a message on source.changes (runtime)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from ragline.connector.settings import ConnectorSettings
from ragline.connector.webhook import create_app
from ragline.events import BIGINT_MAX, EventBase, input_adapter, unstorable

SECRET = "edge-secret"
AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


class Sink:
    def __init__(self) -> None:
        self.events: list[EventBase] = []

    async def publish(self, topic: str, event: EventBase) -> None:
        self.events.append(event)


def upsert(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_type": "source.upsert",
        "tenant_id": "acme",
        "document_id": "wiki:page",
        "source_seq": 1,
        "meta": {"acl_groups": ["eng"], "title": "Title", "metadata": {"k": "v"}},
        "content_text": "hello",
    }
    return {**base, **over}


@pytest.fixture
def posted() -> Any:
    sink = Sink()
    cfg = ConnectorSettings(webhook_secret=SECRET)  # type: ignore[arg-type]

    @asynccontextmanager
    async def factory() -> AsyncIterator[Sink]:
        yield sink

    client = TestClient(create_app(cfg, factory))
    client.__enter__()

    def post(payload: dict[str, Any]) -> tuple[int, dict[str, Any], int]:
        r = client.post("/v1/changes", content=json.dumps(payload).encode(), headers=AUTH)
        return r.status_code, r.json(), len(sink.events)

    yield post
    client.__exit__(None, None, None)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (upsert(document_id="wiki:a\x00b"), "document_id"),
        (upsert(source_seq=10**30), "source_seq"),
        (upsert(source_seq=BIGINT_MAX + 1), "source_seq"),
        (upsert(meta={"acl_groups": ["eng"], "title": "a\x00"}), "meta"),
        (upsert(meta={"acl_groups": ["eng"], "metadata": {"k": "v\x00"}}), "meta"),
        (upsert(meta={"acl_groups": ["eng"], "metadata": {"k\x00": "v"}}), "meta"),
        (upsert(meta={"acl_groups": ["eng"], "supersedes": ["wiki:\x00"]}), "meta"),
        (upsert(event_id="id\x00"), "event_id"),
        (
            {
                "event_type": "source.delete",
                "tenant_id": "acme",
                "document_id": "a:\x00",
                "source_seq": 1,
            },
            "document_id",
        ),
    ],
)
def test_webhook_refuses_unstorable_values_with_422(posted: Any, payload: Any, field: str) -> None:
    status, body, published = posted(payload)
    assert status == 422 and body["field"] == field and published == 0
    assert "\x00" not in json.dumps(body)  # the reason never echoes the value


def test_webhook_accepts_the_largest_bigint_and_nul_in_inline_text(posted: Any) -> None:
    status, _, published = posted(upsert(source_seq=BIGINT_MAX, content_text="a\x00b"))
    assert status == 202 and published == 1


_ADAPTER = input_adapter("source.changes")
_BAD = st.sampled_from(["\x00", "\ud800", "\udfff"])


@given(prefix=st.text(max_size=20), bad=_BAD, suffix=st.text(max_size=20), where=st.integers(0, 3))
def test_any_unstorable_character_anywhere_is_refused(
    prefix: str, bad: str, suffix: str, where: int
) -> None:
    value = prefix + bad + suffix
    meta: dict[str, Any] = {"acl_groups": ["eng"]}
    if where == 0:
        meta["title"] = value
    elif where == 1:
        meta["metadata"] = {"k": value}
    elif where == 2:
        meta["uri"] = value
    else:
        meta["series_id"] = value
    with pytest.raises(ValidationError):
        _ADAPTER.validate_python(upsert(meta=meta))


@given(value=st.text(max_size=50))
def test_storable_text_is_accepted(value: str) -> None:
    if unstorable(value) is None:
        ev = _ADAPTER.validate_python(upsert(meta={"acl_groups": ["eng"], "title": value}))
        assert ev.meta.title == value
    else:
        with pytest.raises(ValidationError):
            _ADAPTER.validate_python(upsert(meta={"acl_groups": ["eng"], "title": value}))


def test_a_poison_body_has_no_owner_so_its_dead_letter_is_still_stored() -> None:
    from ragline.store.claimcheck import body_owner

    assert body_owner(b'{"tenant_id": "t", "document_id": "a:\\u0000b"}') == ("t", None)
    assert body_owner(b'{"tenant_id": "t\\ud800", "document_id": "a:b"}') == (None, "a:b")
    assert body_owner(b'{"tenant_id": "t", "document_id": "a:b"}') == ("t", "a:b")
