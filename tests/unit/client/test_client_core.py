"""Pure logic of ragline-client: Retry-After parsing, the retry policy, token providers,
problem mapping, Standard Webhooks signing, request building. The request loop is driven
through httpx.MockTransport here (scripted answers); the real servers are in
tests/integration/client."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import jwt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline_client import (
    AsyncRagline,
    BadRequest,
    NotFound,
    Ragline,
    RateLimited,
    RefreshingToken,
    ResponseShapeError,
    RetryPolicy,
    StaticToken,
    TransportError,
    Unauthorized,
    Unavailable,
    search_request,
)
from ragline_client.auth import as_provider, jwt_expiry
from ragline_client.errors import problem_of
from ragline_client.retry import parse_retry_after
from ragline_client.webhook import ChangeWebhook, sign_standard, verify_standard

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
OK_BODY = {
    "results": [],
    "abstained": True,
    "version_scope": {"mode": "current", "note": "n"},
    "timings_ms": {"total": 1.0},
    "trace_id": "t",
}


# ------------------------------------------------------------------ Retry-After


def test_retry_after_forms() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("  7 ") == 7.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after("-3") is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after("inf") is None
    later = format_datetime(NOW + timedelta(seconds=42), usegmt=True)
    assert parse_retry_after(later, now=NOW) == 42.0
    earlier = format_datetime(NOW - timedelta(hours=1), usegmt=True)
    assert parse_retry_after(earlier, now=NOW) == 0.0
    # 2^63 and longer digit strings neither overflow nor wait forever
    assert parse_retry_after(str(2**63)) == 365 * 24 * 3600.0
    assert parse_retry_after("9" * 5000) == 365 * 24 * 3600.0
    assert parse_retry_after("\x00") is None
    assert parse_retry_after("١٢") is None  # non-ASCII digits are not delta-seconds


@given(st.text(max_size=60))
def test_retry_after_never_raises_and_is_bounded(value: str) -> None:
    got = parse_retry_after(value, now=NOW)
    assert got is None or 0.0 <= got <= 365 * 24 * 3600.0


@given(st.integers(0, 40), st.sampled_from([None, 429, 500, 502, 503, 504, 400]))
def test_policy_backoff_is_bounded(attempt: int, status: int | None) -> None:
    p = RetryPolicy(attempts=50, backoff_s=0.5, max_backoff_s=8.0)
    d = p.delay(attempt, status, None)
    if status in (500, 400):
        assert d is None
    else:
        assert d is not None and 0 <= d <= 8.0


def test_policy_honours_and_caps_retry_after() -> None:
    p = RetryPolicy(attempts=3, max_retry_after_s=30)
    assert p.delay(0, 429, 12.0) == 12.0
    assert p.delay(0, 503, 0.0) == 0.0
    assert p.delay(0, 429, 31.0) is None  # longer than we wait: give up, say when
    assert p.delay(2, 429, 1.0) is None  # attempts used up
    assert 0 < (p.delay(0, 502, 99.0) or 0) <= p.max_backoff_s  # only 429/503 carry it
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


# ------------------------------------------------------------------ tokens


def test_jwt_expiry_reads_exp_only() -> None:
    tok = jwt.encode({"sub": "a", "exp": 2_000_000_000}, "k" * 32, algorithm="HS256")
    assert jwt_expiry(tok) == 2_000_000_000.0
    assert jwt_expiry("not-a-jwt") is None
    assert jwt_expiry("a.!!!.c") is None
    assert jwt_expiry("a." + base64.urlsafe_b64encode(b'{"exp": true}').decode() + ".c") is None
    assert jwt_expiry("a." + base64.urlsafe_b64encode(b"[1]").decode() + ".c") is None


def test_refreshing_token_refreshes_before_expiry_and_on_invalidate() -> None:
    clock = [1000.0]
    issued: list[int] = []

    def fetch() -> tuple[str, float]:
        issued.append(1)
        return f"tok{len(issued)}", clock[0] + 100

    p = RefreshingToken(fetch, leeway_s=10, clock=lambda: clock[0])
    assert p.get_token() == "tok1"
    clock[0] += 80
    assert p.get_token() == "tok1"
    clock[0] += 15  # inside the leeway
    assert p.get_token() == "tok2"
    assert p.invalidate() is True
    assert p.get_token() == "tok3"
    assert "tok" not in repr(p)


async def test_refreshing_token_async_fetch() -> None:
    async def fetch() -> str:
        return jwt.encode({"exp": time.time() + 600}, "k" * 32, algorithm="HS256")

    p = RefreshingToken(fetch)
    a = await p.aget_token()
    assert await p.aget_token() == a and p.fetches == 1
    with pytest.raises(TypeError, match="async client"):
        RefreshingToken(fetch).get_token()


def test_token_values_are_checked() -> None:
    with pytest.raises(ValueError):
        StaticToken("abc\r\nX-Evil: 1")
    with pytest.raises(ValueError):
        StaticToken("  ")
    with pytest.raises(ValueError):
        RefreshingToken(lambda: "").get_token()
    assert as_provider(None) is None
    assert as_provider("t").get_token() == "t"  # type: ignore[union-attr]
    assert repr(StaticToken("secret-value")) == "StaticToken(***)"
    with pytest.raises(TypeError):
        as_provider(42)  # type: ignore[arg-type]


# ------------------------------------------------------------------ problems


def _resp(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.Response(status, content=content, headers=headers)


def test_problem_shapes() -> None:
    p = problem_of(_resp(422, {"title": "invalid", "status": 422, "invalid_params": []}))
    assert p.title == "invalid" and p.status == 422
    # the status line wins over a lying body
    assert problem_of(_resp(503, {"title": "x", "status": 200})).status == 503
    # the connector's {"error", "reason", "field"}
    w = problem_of(_resp(422, {"error": "invalid", "reason": "meta: bad", "field": "meta"}))
    assert w.title == "invalid" and w.detail == "meta: bad"
    assert w.invalid_params == [{"name": "meta", "reason": "meta: bad"}]
    assert problem_of(_resp(502, b"<html>bad gateway</html>")).title == "Bad Gateway"
    assert problem_of(_resp(500, ["a"])).status == 500
    huge = problem_of(_resp(400, {"error": "e", "reason": "x" * 100_000}))
    assert len(huge.detail or "") <= 500


# ------------------------------------------------------------------ the request loop


class Script:
    """Answers in order; records what was sent."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        nxt = self.answers.pop(0)
        if isinstance(nxt, Exception):
            raise nxt
        return nxt


FAST = RetryPolicy(attempts=3, backoff_s=0.0, max_backoff_s=0.0)


def _client(script: Script, **kw: Any) -> Ragline:
    kw.setdefault("retry", FAST)
    kw.setdefault("token", "tok")
    return Ragline("http://q", transport=httpx.MockTransport(script), **kw)


def test_search_sends_only_what_was_set_with_bearer() -> None:
    s = Script(_resp(200, OK_BODY))
    with _client(s) as rag:
        resp = rag.search("q1", top_k=3, filters={"source_type": "wiki"})
    assert resp.abstained and resp.trace_id == "t"
    body = json.loads(s.seen[0].content)
    assert body == {"query": "q1", "top_k": 3, "filters": {"source_type": ["wiki"]}}
    assert s.seen[0].headers["authorization"] == "Bearer tok"
    assert s.seen[0].headers["user-agent"].startswith("ragline-client/")


def test_invalid_request_never_leaves_the_client() -> None:
    s = Script()
    with _client(s) as rag, pytest.raises(ValueError):
        rag.search("q", top_k=0)
    with _client(s) as rag, pytest.raises(ValueError):
        rag.search("q", acl_groups=["admin"])  # unknown field: forbidden like the server
    with pytest.raises(TypeError):
        search_request(search_request("q"), top_k=3)
    assert search_request(["a", "b"]).queries == ("a", "b")
    assert s.seen == []


def test_retry_after_is_honoured_then_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("ragline_client._transport.time.sleep", slept.append)
    s = Script(
        _resp(429, {"title": "too many", "status": 429}, {"Retry-After": "2"}),
        _resp(503, {"title": "down", "status": 503}, {"Retry-After": "1"}),
        _resp(200, OK_BODY),
    )
    with _client(s) as rag:
        rag.search("q")
    assert slept == [2.0, 1.0] and len(s.seen) == 3


def test_gives_up_with_typed_errors() -> None:
    limited = _resp(429, {"title": "too many", "status": 429}, {"Retry-After": "3600"})
    with _client(Script(limited)) as rag, pytest.raises(RateLimited) as err:
        rag.search("q")
    assert err.value.retry_after == 3600.0 and err.value.status == 429
    down = [_resp(503, {"title": "down", "status": 503}) for _ in range(3)]
    with _client(Script(*down)) as rag, pytest.raises(Unavailable):
        rag.search("q")
    bad = _resp(422, {"title": "invalid field value", "status": 422, "invalid_params": []})
    with _client(Script(bad)) as rag, pytest.raises(BadRequest) as err2:
        rag.search("q")
    assert err2.value.problem.title == "invalid field value"
    nf = Script(_resp(404, {"title": "nf", "status": 404}))
    with _client(nf) as rag, pytest.raises(NotFound):
        rag.document("kb:1")


def test_transport_errors_retry_then_raise() -> None:
    refused = httpx.ConnectError("refused")
    s = Script(refused, httpx.ReadTimeout("slow"), _resp(200, OK_BODY))
    with _client(s) as rag:
        rag.search("q")
    with _client(Script(refused, refused, refused)) as rag, pytest.raises(TransportError):
        rag.search("q")


def test_401_refreshes_the_token_once() -> None:
    toks = iter(["old", "new", "newer"])
    s = Script(
        _resp(401, {"title": "unauthorized", "status": 401}),
        _resp(401, {"title": "unauthorized", "status": 401}),
    )
    with _client(s, token=RefreshingToken(lambda: next(toks))) as rag, pytest.raises(Unauthorized):
        rag.search("q")
    assert [r.headers["authorization"] for r in s.seen] == ["Bearer old", "Bearer new"]
    # a static token is not retried: the same token would be refused again
    s2 = Script(_resp(401, {"title": "unauthorized", "status": 401}))
    with _client(s2) as rag, pytest.raises(Unauthorized):
        rag.search("q")
    assert len(s2.seen) == 1


def test_unexpected_body_is_a_shape_error() -> None:
    s = Script(_resp(200, {"results": "nope"}))
    with _client(s) as rag, pytest.raises(ResponseShapeError, match="SearchResponse"):
        rag.search("q")


@given(st.text(min_size=1, max_size=40) | st.sampled_from([".", "..", "...", "./..", "%2e%2e"]))
def test_document_ids_are_one_path_segment(doc_id: str) -> None:
    s = Script(_resp(404, {"title": "nf", "status": 404}))
    with _client(s, retry=RetryPolicy(attempts=1)) as rag, pytest.raises(NotFound):
        rag.document(doc_id)
    raw = s.seen[0].url.raw_path.decode()
    assert raw.startswith("/v1/documents/")
    segment = raw.removeprefix("/v1/documents/")
    assert segment and "/" not in segment  # '/', '?', '#' all encoded
    assert segment.strip(".")  # never a dot-segment that URL normalisation would remove


async def test_async_client_same_loop() -> None:
    s = Script(
        _resp(503, {"title": "down", "status": 503}, {"Retry-After": "0"}), _resp(200, OK_BODY)
    )
    async with AsyncRagline(
        "http://q", token="t", retry=FAST, transport=httpx.MockTransport(s)
    ) as rag:
        assert (await rag.search("q")).trace_id == "t"
        view = rag.with_token("other")
        s.answers.append(_resp(200, OK_BODY))
        await view.search("q")
    assert [r.headers["authorization"] for r in s.seen] == ["Bearer t", "Bearer t", "Bearer other"]


# ------------------------------------------------------------------ webhook signing


def test_standard_webhooks_reference_vector() -> None:
    # the reference vector of the Standard Webhooks libraries
    sig = sign_standard(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        b'{"test": 2432232314}',
    )
    assert sig == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_verify_standard_rotation_tolerance_and_tamper() -> None:
    body = b'{"a":1}'
    h = {
        "webhook-id": "m1",
        "webhook-timestamp": "1000",
        "webhook-signature": "v1,bogus " + sign_standard("new", "m1", 1000, body),
    }
    assert verify_standard(["old", "new"], h, body, now=1000)
    assert not verify_standard(["old"], h, body, now=1000)
    assert not verify_standard(["new"], h, body + b" ", now=1000)
    assert not verify_standard(["new"], h, body, now=1000 + 301)
    assert not verify_standard(["new"], {**h, "webhook-timestamp": "1e3"}, body, now=1000)
    assert not verify_standard(["new"], {**h, "webhook-timestamp": str(2**63)}, body, now=1000)


def test_webhook_sends_signed_change_with_stable_event_id() -> None:
    accepted = {
        "accepted": True,
        "event_id": "x",
        "event_type": "source.delete",
        "document_id": "d",
    }
    s = Script(_resp(503, {"error": "unavailable", "reason": "broker"}), _resp(202, accepted))
    change = {"event_type": "source.delete", "tenant_id": "t", "document_id": "d", "source_seq": 1}
    hook = ChangeWebhook("http://c", secret="s3cret", retry=FAST, transport=httpx.MockTransport(s))
    with hook:
        receipt = hook.send(change)
    assert receipt.accepted
    ids = {r.headers["webhook-id"] for r in s.seen}
    bodies = {r.content for r in s.seen}
    assert len(ids) == 1 and len(bodies) == 1  # the retry is the same event
    sent = json.loads(s.seen[1].content)
    assert sent["event_id"] == s.seen[1].headers["webhook-id"]
    assert verify_standard(["s3cret"], dict(s.seen[1].headers), s.seen[1].content)
    assert "authorization" not in s.seen[1].headers and "s3cret" not in repr(hook)


def test_webhook_bearer_form_and_bad_secrets() -> None:
    accepted = {
        "accepted": True,
        "event_id": "e",
        "event_type": "source.delete",
        "document_id": "d",
    }
    s = Script(_resp(202, accepted))
    with ChangeWebhook(
        "http://c", secret="s3cret", auth="bearer", transport=httpx.MockTransport(s)
    ) as hook:
        hook.send({"event_id": "e", "event_type": "source.delete"})
    assert s.seen[0].headers["authorization"] == "Bearer s3cret"
    assert "webhook-signature" not in s.seen[0].headers
    with pytest.raises(ValueError):
        ChangeWebhook("http://c", secret="")
    with pytest.raises(ValueError):
        ChangeWebhook("http://c", secret="whsec_***not base64***")
