"""The client's ``WebhookReceipt`` reads every field the connector's webhook answers
(``connector/webhook.py``, its 202 body is built by hand, not from a shared model): a key
the server adds that the client drops fails here. Run against the real webhook app."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_args

from fastapi.testclient import TestClient

from ragline.connector.settings import ConnectorSettings
from ragline.connector.webhook import create_app
from ragline.events import EventBase, Lane
from ragline_client import WebhookReceipt

SECRET = "s3cret-for-receipt-tests"
BEARER = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}
UPSERT = Path(__file__).parents[2] / "fixtures" / "connector" / "webhook" / "upsert_inline.json"


class _Sink:
    async def publish(self, topic: str, event: EventBase) -> None:
        return None


def _client(**kw: Any) -> TestClient:
    cfg = ConnectorSettings(webhook_secret=SECRET, **kw)

    @asynccontextmanager
    async def factory() -> AsyncIterator[_Sink]:
        yield _Sink()

    return TestClient(create_app(cfg, factory))


def _post(client: TestClient, seq: int, **over: Any) -> dict[str, Any]:
    change = {**json.loads(UPSERT.read_text()), "source_seq": seq, **over}
    r = client.post("/v1/changes", content=json.dumps(change), headers=BEARER)
    assert r.status_code == 202, r.text
    out: dict[str, Any] = r.json()
    return out


def test_the_receipt_reads_every_field_the_webhook_answers() -> None:
    # a budget of one interactive change: the second upsert of the tenant goes bulk
    with _client(tenant_interactive_rate=0.001, tenant_interactive_burst=1) as client:
        first, second = _post(client, 1), _post(client, 2)
        sent_bulk = _post(client, 3, priority="bulk", tenant_id="other-tenant")
    for body in (first, second, sent_bulk):
        assert set(body) <= set(WebhookReceipt.model_fields), sorted(
            set(body) - set(WebhookReceipt.model_fields)
        )
        receipt = WebhookReceipt.model_validate(body)
        assert receipt.model_dump() == body  # nothing dropped, nothing renamed
    assert WebhookReceipt.model_validate(first).priority == "interactive"
    assert WebhookReceipt.model_validate(second).priority == "bulk"  # over the budget
    assert WebhookReceipt.model_validate(sent_bulk).priority == "bulk"


def test_the_receipts_lanes_are_the_servers() -> None:
    (ann,) = [WebhookReceipt.model_fields["priority"].annotation]
    assert set(get_args(ann)) == set(get_args(Lane))


def test_a_receipt_of_an_older_connector_still_parses() -> None:
    old = {"accepted": True, "event_id": "e", "event_type": "source.delete", "document_id": "d"}
    assert WebhookReceipt.model_validate(old).priority == "interactive"
