"""Obtaining a document's bytes: inline text/base64, a file under an allowed root, or an
http(s) URL on a host allow-list, always within a size limit and a timeout.

Violations are the document's fault, not the platform's: they raise ``QuarantineError``
with a specific reason code. Network hiccups raise ``TransientError`` (retried).
Reasons name hosts and limits, never paths' contents or document text.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import httpx

from ragline.connector.metrics import FETCH_BYTES, FETCH_SECONDS
from ragline.connector.settings import ConnectorSettings
from ragline.errors import QuarantineError, TransientError
from ragline.events import ContentRef, SourceUpsert

__all__ = ["ContentFetcher", "Fetched", "host_allowed", "path_allowed"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True, kw_only=True)
class Fetched:
    data: bytes
    kind: str  # text | base64 | file | http


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """Exact host names, or ``*.example.com`` for any subdomain (not the apex itself)."""
    host = host.lower().rstrip(".")
    for pattern in allowed:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and host != pattern[2:]:
                return True
        elif host == pattern:
            return True
    return False


def path_allowed(path: Path, roots: tuple[Path, ...]) -> bool:
    """``path`` must already be resolved (symlinks followed, no ``..``)."""
    return any(path.is_relative_to(root.resolve()) for root in roots)


def _oversize(size: int, limit: int) -> QuarantineError:
    return QuarantineError(
        "oversize_document", f"document is {size} bytes or more; the limit is {limit}"
    )


class ContentFetcher:
    """One per connector process; ``open()`` creates the pooled HTTP client."""

    def __init__(
        self, cfg: ConnectorSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.cfg = cfg
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    async def open(self) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(
                transport=self._transport,
                timeout=httpx.Timeout(self.cfg.fetch_timeout_s),
                follow_redirects=False,  # each hop is checked against the allow-list
                trust_env=False,
            )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def obtain(self, event: SourceUpsert) -> Fetched:
        start = time.perf_counter()
        if event.content_text is not None:
            got = Fetched(data=self._inline_text(event.content_text), kind="text")
        elif event.content_b64 is not None:
            got = Fetched(data=self._inline_b64(event.content_b64), kind="base64")
        else:
            assert event.content_ref is not None  # the contract guarantees one of three
            got = await self.fetch_ref(event.content_ref)
        FETCH_SECONDS.labels(got.kind).observe(time.perf_counter() - start)
        FETCH_BYTES.labels(got.kind).inc(len(got.data))
        return got

    # ------------------------------------------------------------------ inline

    def _inline_text(self, text: str) -> bytes:
        data = text.encode("utf-8")
        if len(data) > self.cfg.max_document_bytes:
            raise _oversize(len(data), self.cfg.max_document_bytes)
        return data

    def _inline_b64(self, b64: str) -> bytes:
        if len(b64) // 4 * 3 > self.cfg.max_document_bytes + 2:
            raise _oversize(len(b64) // 4 * 3, self.cfg.max_document_bytes)
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise QuarantineError("invalid_base64", "content_b64 is not valid base64") from None
        if len(data) > self.cfg.max_document_bytes:
            raise _oversize(len(data), self.cfg.max_document_bytes)
        return data

    # ------------------------------------------------------------------ references

    async def fetch_ref(self, ref: ContentRef) -> Fetched:
        if ref.kind == "file":
            return await asyncio.to_thread(self._read_file, ref.location)
        return await self._fetch_http(ref.location)

    def _read_file(self, location: str) -> Fetched:
        if location.startswith("file://"):
            location = unquote(urlsplit(location).path)
        raw = Path(location)
        if not raw.is_absolute():
            raise QuarantineError("fetch_path_not_allowed", "file references must be absolute")
        if not self.cfg.allowed_roots:
            raise QuarantineError(
                "fetch_path_not_allowed", "no allowed roots configured for file references"
            )
        try:
            path = raw.resolve(strict=True)
        except FileNotFoundError:
            raise QuarantineError("fetch_not_found", "referenced file does not exist") from None
        except (OSError, RuntimeError):
            raise QuarantineError("fetch_not_found", "referenced file cannot be resolved") from None
        if not path_allowed(path, self.cfg.allowed_roots):
            raise QuarantineError(
                "fetch_path_not_allowed", "referenced file is outside the allowed roots"
            )
        if not path.is_file():
            raise QuarantineError("fetch_not_a_file", "referenced path is not a regular file")
        limit = self.cfg.max_document_bytes
        try:
            size = path.stat().st_size
            if size > limit:
                raise _oversize(size, limit)
            with path.open("rb") as fh:
                data = fh.read(limit + 1)  # the file may have grown since stat
        except PermissionError:
            raise QuarantineError("fetch_forbidden", "referenced file is not readable") from None
        except FileNotFoundError:
            raise QuarantineError("fetch_not_found", "referenced file vanished") from None
        if len(data) > limit:
            raise _oversize(len(data), limit)
        return Fetched(data=data, kind="file")

    def _check_url(self, url: str) -> None:
        parts = urlsplit(url)
        schemes = ("https", "http") if self.cfg.allow_plain_http else ("https",)
        if parts.scheme not in schemes:
            raise QuarantineError(
                "fetch_scheme_not_allowed",
                f"scheme {parts.scheme!r} not allowed; allowed: {', '.join(schemes)}",
            )
        host = parts.hostname or ""
        if not host or not host_allowed(host, self.cfg.allowed_hosts):
            raise QuarantineError(
                "fetch_host_not_allowed", f"host {host[:255]!r} is not on the allow-list"
            )

    async def _fetch_http(self, url: str) -> Fetched:
        await self.open()
        assert self._client is not None
        for _ in range(self.cfg.fetch_max_redirects + 1):
            self._check_url(url)
            try:
                async with self._client.stream("GET", url) as resp:
                    if resp.status_code in _REDIRECTS and "location" in resp.headers:
                        url = urljoin(url, resp.headers["location"])
                        continue
                    self._check_status(resp.status_code)
                    data = await self._read_limited(resp)
            except httpx.TimeoutException:
                raise TransientError("fetch timed out") from None
            except httpx.TransportError as exc:
                raise TransientError(f"fetch failed: {type(exc).__name__}") from None
            return Fetched(data=data, kind="http")
        raise QuarantineError(
            "fetch_too_many_redirects", f"more than {self.cfg.fetch_max_redirects} redirects"
        )

    @staticmethod
    def _check_status(status: int) -> None:
        if status in (404, 410):
            raise QuarantineError("fetch_not_found", f"source answered HTTP {status}")
        if status == 429 or status >= 500:
            raise TransientError(f"source answered HTTP {status}")
        if status >= 400:
            raise QuarantineError("fetch_http_status", f"source answered HTTP {status}")
        if status >= 300:
            raise QuarantineError("fetch_http_status", f"unfollowable HTTP {status}")

    async def _read_limited(self, resp: httpx.Response) -> bytes:
        limit = self.cfg.max_document_bytes
        declared = resp.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise _oversize(int(declared), limit)
        buf = bytearray()
        async for piece in resp.aiter_bytes():
            buf += piece
            if len(buf) > limit:
                raise _oversize(len(buf), limit)
        return bytes(buf)
