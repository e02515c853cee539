"""Request size caps applied before routing, parsing or authentication (pure ASGI).

A request whose headers exceed ``max_header_bytes`` is answered 431, one whose body
exceeds ``max_body_bytes`` 413, both as ``application/problem+json``: the declared
``Content-Length`` is checked first, then the body is buffered up to the cap (chunked
uploads too) and replayed to the app, so no handler and no token check ever sees an
oversized request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["SizeLimits", "problem_bytes"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_TITLES = {
    400: "invalid Content-Length",
    413: "request body too large",
    431: "request header fields too large",
}
_TYPES = {400: "invalid-request", 413: "payload-too-large", 431: "headers-too-large"}


def problem_bytes(status: int, title: str, detail: str, instance: str) -> bytes:
    body = {
        "type": f"https://ragline.dev/problems/{_TYPES.get(status, 'error')}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": instance,
    }
    return json.dumps(body).encode()


class SizeLimits:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_header_bytes: int) -> None:
        self.app = app
        self.max_body = max_body_bytes
        self.max_headers = max_header_bytes

    async def _reject(self, scope: Scope, send: Send, status: int, detail: str) -> None:
        body = problem_bytes(status, _TITLES[status], detail, scope.get("path", ""))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        size = sum(len(k) + len(v) + 4 for k, v in headers)
        if size > self.max_headers:
            await self._reject(scope, send, 431, f"headers exceed {self.max_headers} bytes")
            return
        too_big = f"body exceeds {self.max_body} bytes"
        for k, v in headers:
            if k == b"content-length":
                if not v.isdigit():
                    await self._reject(scope, send, 400, "Content-Length is not a number")
                    return
                if int(v) > self.max_body:
                    await self._reject(scope, send, 413, too_big)
                    return
        buf = bytearray()
        more = True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            buf += msg.get("body", b"")
            more = bool(msg.get("more_body", False))
            if len(buf) > self.max_body:
                await self._reject(scope, send, 413, too_big)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(buf), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
