"""Webhook HTTP layer: auth (bearer, HMAC), size limit, validation with the failing field."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ragline.connector.settings import ConnectorSettings
from ragline.connector.webhook import SIGNATURE_HEADER, create_app, credentials_of, sign
from ragline.connector.webhook_auth import sign_standard
from ragline.errors import BackendUnavailable, ConfigError
from ragline.events import EventBase, SourceUpsert

SECRET = "s3cret-for-tests"
PAYLOADS = Path(__file__).parents[2] / "fixtures" / "connector" / "webhook"


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, EventBase]] = []
        self.down = False

    async def publish(self, topic: str, event: EventBase) -> None:
        if self.down:
            raise BackendUnavailable("down")
        self.events.append((topic, event))


def make_client(sink: Sink, *, secret: str | None = SECRET, **kw: object) -> TestClient:
    cfg = ConnectorSettings(webhook_secret=secret, webhook_max_body_bytes=4096, **kw)  # type: ignore[arg-type]

    @asynccontextmanager
    async def factory() -> AsyncIterator[Sink]:
        yield sink

    return TestClient(create_app(cfg, factory))


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
def client(sink: Sink) -> Iterator[TestClient]:
    with make_client(sink) as c:
        yield c


def body(name: str) -> bytes:
    return (PAYLOADS / name).read_bytes()


BEARER = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


def test_bearer_accepts_and_publishes(client: TestClient, sink: Sink) -> None:
    r = client.post("/v1/changes", content=body("upsert_inline.json"), headers=BEARER)
    assert r.status_code == 202, r.text
    out = r.json()
    assert out["accepted"] is True and out["topic"] == "source.changes"
    [(topic, event)] = sink.events
    assert topic == "source.changes" and isinstance(event, SourceUpsert)
    assert out["event_id"] == event.event_id and event.document_id == "wiki:runbooks/restart-db"


@pytest.mark.parametrize("name", ["delete.json", "acl.json", "upsert_ref.json"])
def test_every_change_kind_is_accepted(client: TestClient, sink: Sink, name: str) -> None:
    r = client.post("/v1/changes", content=body(name), headers=BEARER)
    assert r.status_code == 202, r.text
    assert sink.events[-1][1].event_type == json.loads(body(name))["event_type"]


def test_hmac_signature_accepts(client: TestClient, sink: Sink) -> None:
    raw = body("delete.json")
    r = client.post("/v1/changes", content=raw, headers={SIGNATURE_HEADER: sign(SECRET, raw)})
    assert r.status_code == 202
    assert len(sink.events) == 1


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        ({}, "missing credentials"),
        ({"Authorization": "Bearer wrong"}, "bearer token is not valid"),
        ({"Authorization": f"Basic {SECRET}"}, "must be 'Bearer <secret>'"),
        ({SIGNATURE_HEADER: "sha256=" + "0" * 64}, "does not match the body"),
        ({SIGNATURE_HEADER: sign("other-secret", b"{}")}, "does not match the body"),
    ],
)
def test_bad_auth_is_401_with_reason(
    client: TestClient, sink: Sink, headers: dict[str, str], fragment: str
) -> None:
    r = client.post("/v1/changes", content=body("delete.json"), headers=headers)
    assert r.status_code == 401
    assert r.json()["error"] == "unauthorized" and fragment in r.json()["reason"]
    assert sink.events == []


def test_signature_over_a_different_body_fails(client: TestClient) -> None:
    raw = body("delete.json")
    tampered = raw.replace(b"restart-db", b"restart-xx")
    r = client.post("/v1/changes", content=tampered, headers={SIGNATURE_HEADER: sign(SECRET, raw)})
    assert r.status_code == 401


def test_oversize_is_413_declared_or_streamed(client: TestClient, sink: Sink) -> None:
    big = json.dumps({"pad": "x" * 5000}).encode()
    r = client.post("/v1/changes", content=big, headers=BEARER)
    assert r.status_code == 413 and r.json()["limit"] == 4096

    def chunks() -> Iterator[bytes]:  # no content-length: chunked transfer
        for _ in range(10):
            yield b"x" * 1000

    r = client.post("/v1/changes", content=chunks(), headers=BEARER)
    assert r.status_code == 413
    assert sink.events == []


def post_json(client: TestClient, payload: object) -> dict[str, object]:
    r = client.post("/v1/changes", content=json.dumps(payload).encode(), headers=BEARER)
    assert r.status_code == 422, r.text
    return r.json()  # type: ignore[no-any-return]


def test_invalid_payloads_name_the_failing_field(client: TestClient, sink: Sink) -> None:
    base = json.loads(body("upsert_inline.json"))
    out = post_json(client, {**base, "meta": {**base["meta"], "acl_groups": ["bad group"]}})
    assert out["error"] == "invalid" and out["field"] == "meta.acl_groups.0"
    assert out["field"] in str(out["reason"])
    assert post_json(client, {**base, "tenant_id": "Acme Corp"})["field"] == "tenant_id"
    assert post_json(client, {**base, "surprise": 1})["field"] == "surprise"
    no_content = {k: v for k, v in base.items() if k != "content_text"}
    out = post_json(client, no_content)
    assert "exactly one of content_text" in str(out["reason"])
    assert (
        post_json(client, {k: v for k, v in base.items() if k != "event_type"})["field"]
        == "event_type"
    )
    assert post_json(client, {**base, "event_type": "source.rename"})["field"] == "event_type"
    assert post_json(client, {**base, "source_seq": -1})["field"] == "source_seq"
    r = client.post("/v1/changes", content=b"{not json", headers=BEARER)
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "json_invalid"
    assert sink.events == []


def test_errors_never_echo_submitted_values(client: TestClient) -> None:
    base = json.loads(body("upsert_inline.json"))
    canary = "AKIAIOSFODNN7EXAMPLE-canary"
    r = client.post(
        "/v1/changes",
        content=json.dumps({**base, "source_seq": canary, "content_text": canary}).encode(),
        headers=BEARER,
    )
    assert r.status_code == 422 and canary not in r.text


def test_tenant_allow_list_and_file_refs(sink: Sink) -> None:
    with make_client(sink, webhook_tenants=("globex",)) as c:
        r = c.post("/v1/changes", content=body("delete.json"), headers=BEARER)
        assert r.status_code == 403 and r.json()["field"] == "tenant_id"
    file_ref = json.loads(body("upsert_ref.json"))
    file_ref["content_ref"] = {"kind": "file", "location": "/etc/passwd"}
    with make_client(sink) as c:
        r = c.post("/v1/changes", content=json.dumps(file_ref).encode(), headers=BEARER)
        assert r.status_code == 422 and r.json()["field"] == "content_ref.kind"
    with make_client(sink, webhook_allow_file_refs=True) as c:
        r = c.post("/v1/changes", content=json.dumps(file_ref).encode(), headers=BEARER)
        assert r.status_code == 202  # the connector's allowed roots still apply at fetch
    assert len(sink.events) == 1


def test_broker_down_is_503(client: TestClient, sink: Sink) -> None:
    sink.down = True
    r = client.post("/v1/changes", content=body("delete.json"), headers=BEARER)
    assert r.status_code == 503 and r.json()["error"] == "unavailable"
    assert r.headers["Retry-After"] == "5"
    assert sink.events == []


class HangingSink(Sink):
    """A broker that takes the write but never acknowledges it (gone mid-request)."""

    async def publish(self, topic: str, event: EventBase) -> None:
        await asyncio.sleep(3600)


def test_an_unacknowledged_publish_is_503_in_bounded_time() -> None:
    sink = HangingSink()
    with make_client(sink, webhook_publish_timeout_s=0.3, webhook_retry_after_s=7) as c:
        t0 = time.monotonic()
        r = c.post("/v1/changes", content=body("delete.json"), headers=BEARER)
        took = time.monotonic() - t0
    assert r.status_code == 503 and r.headers["Retry-After"] == "7", r.text
    assert took < 30  # not the producer's own 40 s (a loose bound: a loaded machine)


def test_no_secret_no_webhook() -> None:
    with pytest.raises(ConfigError):
        create_app(ConnectorSettings(), lambda: None)  # type: ignore[arg-type,return-value]


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


# ---- issue 14: scoped credentials, Standard Webhooks signatures, replay window

WIKI = "wiki-writer-secret-0123456789"
CRM = "whsec_" + base64.b64encode(b"crm-signing-key-32-bytes-long!!!").decode()
CREDS = json.dumps(
    [
        {"id": "wiki", "secret": WIKI, "tenants": ["acme"], "document_id_prefixes": ["wiki:"]},
        {"id": "crm", "secret": CRM, "tenants": ["globex"], "document_id_prefixes": ["crm:"]},
    ]
)


def scoped_client(sink: Sink, **kw: object) -> TestClient:
    return make_client(sink, secret=None, webhook_credentials=CREDS, **kw)


def standard(secret: str, raw: bytes, *, msg_id: str = "msg_1", ts: int | None = None) -> dict:
    ts = int(time.time()) if ts is None else ts
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sign_standard(secret, msg_id, ts, raw),
        "Content-Type": "application/json",
    }


def with_doc(name: str, **over: object) -> bytes:
    return json.dumps({**json.loads(body(name)), **over}).encode()


def test_each_credential_writes_only_its_tenants_and_sources(sink: Sink) -> None:
    """Defect 7: one secret wrote every tenant and could re-ACL any source's documents."""
    with scoped_client(sink) as c:
        acl = body("acl.json")  # acme, wiki:runbooks/restart-db
        ok = c.post("/v1/changes", content=acl, headers={"Authorization": f"Bearer {WIKI}"})
        assert ok.status_code == 202, ok.text
        # the crm credential may neither re-ACL the wiki's document nor write acme
        r = c.post("/v1/changes", content=acl, headers=standard(CRM, acl))
        assert r.status_code == 403 and r.json()["field"] == "tenant_id"
        other = with_doc("acl.json", tenant_id="globex")
        r = c.post("/v1/changes", content=other, headers=standard(CRM, other, msg_id="m2"))
        assert r.status_code == 403 and r.json()["field"] == "document_id"
        crm = with_doc("delete.json", tenant_id="globex", document_id="crm:acct/42")
        r = c.post("/v1/changes", content=crm, headers=standard(CRM, crm, msg_id="m3"))
        assert r.status_code == 202, r.text
        # the wiki credential cannot touch the crm source either
        r = c.post("/v1/changes", content=crm, headers={"Authorization": f"Bearer {WIKI}"})
        assert r.status_code == 403
    assert [e.document_id for _, e in sink.events] == ["wiki:runbooks/restart-db", "crm:acct/42"]


def test_standard_webhooks_replay_window_and_duplicates(sink: Sink) -> None:
    raw = body("delete.json")
    with scoped_client(sink, webhook_replay_window_s=60) as c:
        stale = standard(WIKI, raw, ts=int(time.time()) - 120)
        r = c.post("/v1/changes", content=raw, headers=stale)
        assert r.status_code == 401 and "replay window" in r.json()["reason"]
        future = standard(WIKI, raw, ts=int(time.time()) + 120)
        assert c.post("/v1/changes", content=raw, headers=future).status_code == 401
        h = standard(WIKI, raw, msg_id="evt_7")
        first = c.post("/v1/changes", content=raw, headers=h)
        assert first.status_code == 202 and first.json()["duplicate"] is False
        again = c.post("/v1/changes", content=raw, headers=h)  # a replay inside the window
        assert again.status_code == 202 and again.json()["duplicate"] is True
        tampered = raw.replace(b"restart-db", b"restart-xx")
        assert c.post("/v1/changes", content=tampered, headers=h).status_code == 401
        # signed with another message id: the signature covers id and timestamp too
        h2 = {**h, "webhook-id": "evt_8"}
        assert c.post("/v1/changes", content=raw, headers=h2).status_code == 401
    assert len(sink.events) == 1


def test_failed_publish_is_not_remembered(sink: Sink) -> None:
    raw = body("delete.json")
    h = standard(WIKI, raw, msg_id="evt_retry")
    with scoped_client(sink) as c:
        sink.down = True
        assert c.post("/v1/changes", content=raw, headers=h).status_code == 503
        sink.down = False
        r = c.post("/v1/changes", content=raw, headers=h)
        assert r.status_code == 202 and r.json()["duplicate"] is False
    assert len(sink.events) == 1


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        ({"webhook-id": "x"}, "are required"),
        (
            {"webhook-id": "x", "webhook-timestamp": "soon", "webhook-signature": "v1,AA=="},
            "integer",
        ),
        (
            {"webhook-id": "x", "webhook-timestamp": "1e3", "webhook-signature": "v1,AA=="},
            "integer",
        ),
        (
            {"webhook-id": "x", "webhook-timestamp": "٣٣".encode(), "webhook-signature": "v1,AA=="},
            "integer",
        ),
        (
            {"webhook-id": "x", "webhook-timestamp": "9" * 40, "webhook-signature": "v1,A"},
            "integer",
        ),
        ({"webhook-id": "x", "webhook-timestamp": "NOW", "webhook-signature": "v1,A"}, "integer"),
        ({"webhook-id": "x", "webhook-timestamp": "TS", "webhook-signature": "v2,AA=="}, "match"),
    ],
)
def test_malformed_standard_headers_are_401(
    sink: Sink, headers: dict[str, str], fragment: str
) -> None:
    headers = {k: (str(int(time.time())) if v in ("TS",) else v) for k, v in headers.items()}
    with scoped_client(sink) as c:
        r = c.post("/v1/changes", content=body("delete.json"), headers=headers)
    assert r.status_code == 401 and fragment in r.json()["reason"], r.text


def test_several_signatures_any_valid_one_counts(sink: Sink) -> None:
    raw = body("delete.json")
    h = standard(WIKI, raw)
    h["webhook-signature"] = "v1,AAAA " + h["webhook-signature"]  # key rotation: old + new
    with scoped_client(sink) as c:
        assert c.post("/v1/changes", content=raw, headers=h).status_code == 202


def test_legacy_signature_can_be_refused(sink: Sink) -> None:
    raw = body("delete.json")
    with make_client(sink, webhook_legacy_signature=False) as c:
        r = c.post("/v1/changes", content=raw, headers={SIGNATURE_HEADER: sign(SECRET, raw)})
        assert r.status_code == 401 and "disabled" in r.json()["reason"]
        ok = c.post("/v1/changes", content=raw, headers=standard(SECRET, raw))
        assert ok.status_code == 202  # the single secret speaks Standard Webhooks too


@pytest.mark.parametrize(
    "creds",
    [
        "not json",
        json.dumps([{"id": "a", "secret": "short"}]),
        json.dumps([{"id": "a", "secret": "x" * 20, "tenants": ["Bad Tenant"]}]),
        json.dumps([{"id": "a", "secret": "x" * 20, "document_id_prefixes": ["nocolon"]}]),
        json.dumps([{"id": "a", "secret": "x" * 20}, {"id": "a", "secret": "y" * 20}]),
        json.dumps([{"id": "a", "secret": "whsec_!!!notbase64!!!"}]),
        json.dumps([{"id": "a", "secret": "x" * 20, "surprise": 1}]),
    ],
)
def test_invalid_credentials_refuse_to_start(creds: str) -> None:
    with pytest.raises(ConfigError) as info:
        create_app(ConnectorSettings(webhook_credentials=creds), lambda: None)  # type: ignore[arg-type,return-value]
    assert "x" * 20 not in str(info.value) and "short" not in str(info.value)


def test_credentials_file(tmp_path: Path, sink: Sink) -> None:
    path = tmp_path / "creds.json"
    path.write_text(CREDS)
    cfg = ConnectorSettings(webhook_credentials_file=path)
    assert cfg.webhook_configured
    assert [c.id for c in credentials_of(cfg)] == ["wiki", "crm"]
    assert not ConnectorSettings().webhook_configured
