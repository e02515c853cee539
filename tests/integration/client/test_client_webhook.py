"""ChangeWebhook / AsyncChangeWebhook against the real connector webhook (served by
uvicorn over real HTTP, publishing to the real broker), signed with Standard Webhooks:
accepted and published once, a resent delivery is a duplicate, a tampered or stale
signature and another credential's tenant are refused, the bearer form still works."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from client_helpers import REPO, Seeded, child_env, connector_collect
from query_helpers import GROUP_A

from ragline.config import Settings
from ragline.connector.settings import ConnectorSettings
from ragline.connector.webhook import create_app
from ragline.events import Topics
from ragline.platform.stack.testing import free_port
from ragline.runtime.publisher import EventPublisher
from ragline_client import AsyncChangeWebhook, ChangeWebhook, RetryPolicy, Unauthorized
from ragline_client.webhook import signature_headers

pytestmark = pytest.mark.integration

SECRET = "whsec_" + "Y2xpZW50LXdlYmhvb2stdGVzdC1zZWNyZXQtMDEyMzQ1"  # base64 of 33 bytes
OTHER = "another-credential-secret-0123456789"


@pytest.fixture(scope="module")
def webhook_url(stack: Settings, seeded: Seeded) -> Iterator[str]:
    """The connector's webhook app in uvicorn on a free port, in a thread of this process."""
    creds = [
        {"id": "client-tests", "secret": SECRET, "tenants": [seeded.tenant]},
        {"id": "other", "secret": OTHER, "tenants": ["someone-else"]},
    ]
    cfg = ConnectorSettings(webhook_credentials=json.dumps(creds))
    app = create_app(cfg, lambda: EventPublisher(stack, service="client-webhook-test"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "webhook server did not start"
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _upsert(tenant: str, doc: str, seq: int = 1) -> dict[str, Any]:
    return {
        "event_type": "source.upsert",
        "tenant_id": tenant,
        "document_id": doc,
        "source_seq": seq,
        "meta": {"title": "From the client", "acl_groups": [GROUP_A]},
        "content_text": "Sent by ragline-client, signed with Standard Webhooks.",
    }


async def test_signed_changes_are_published_once(
    webhook_url: str, stack: Settings, seeded: Seeded
) -> None:
    with ChangeWebhook(webhook_url, secret=SECRET) as hook:
        first = hook.send(_upsert(seeded.tenant, "wiki:signed-1"))
        assert first.accepted and not first.duplicate
        # the same event again (a retry after a lost answer): answered, not republished
        again = hook.send(dict(_upsert(seeded.tenant, "wiki:signed-1"), event_id=first.event_id))
        assert again.duplicate and again.event_id == first.event_id
    async with AsyncChangeWebhook(webhook_url, secret=SECRET) as ahook:
        second = await ahook.send(_upsert(seeded.tenant, "wiki:signed-2"))
        assert second.accepted
    events = await connector_collect()(
        stack, Topics.SOURCE_CHANGES.value, seeded.tenant, count=2, settle_s=1.0
    )
    assert sorted(e["event_id"] for e in events) == sorted([first.event_id, second.event_id])


def test_refusals(webhook_url: str, seeded: Seeded) -> None:
    once = RetryPolicy(attempts=1)
    # a credential scoped to another tenant may not write this one
    with ChangeWebhook(webhook_url, secret=OTHER, retry=once) as hook:
        with pytest.raises(Exception) as err:
            hook.send(_upsert(seeded.tenant, "wiki:not-mine"))
        assert getattr(err.value, "status", None) in (401, 403)
    wrong = ChangeWebhook(webhook_url, secret="whsec_" + "A" * 44, retry=once)
    with wrong, pytest.raises(Unauthorized):
        wrong.send(_upsert(seeded.tenant, "wiki:wrong-key"))
    # tampered body and a stale timestamp, by hand with the client's signer
    body = json.dumps(dict(_upsert(seeded.tenant, "wiki:tampered"), event_id="e-tamper")).encode()
    headers = signature_headers(SECRET, "e-tamper", body)
    r = httpx.post(f"{webhook_url}/v1/changes", content=body + b" ", headers=headers)
    assert r.status_code == 401
    stale = signature_headers(SECRET, "e-stale", body, now=time.time() - 3600)
    r = httpx.post(f"{webhook_url}/v1/changes", content=body, headers=stale)
    assert r.status_code == 401


def test_the_guides_webhook_example_runs(webhook_url: str, seeded: Seeded) -> None:
    guide = (REPO / "docs" / "clients.md").read_text()
    (block,) = re.findall(r"<!-- run: webhook -->\n```python\n(.*?)```", guide, re.S)
    env = child_env(
        RAGLINE_CONNECTOR_URL=webhook_url,
        RAGLINE_CONNECTOR_WEBHOOK_SECRET=SECRET,
        RAGLINE_TENANT=seeded.tenant,
    )
    proc = subprocess.run(
        [sys.executable, "-c", block],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("True new")
