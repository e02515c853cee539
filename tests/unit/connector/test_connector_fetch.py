"""Fetching: inline content, file allow-list (roots, symlinks), http allow-list, limits."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

from ragline.connector.fetch import ContentFetcher, host_allowed
from ragline.connector.settings import ConnectorSettings
from ragline.errors import QuarantineError, TransientError
from ragline.events import ContentRef, DocumentMeta, SourceUpsert


def cfg(**kw: object) -> ConnectorSettings:
    base: dict[str, object] = {
        "max_document_bytes": 1000,
        "allowed_hosts": ("docs.example.com", "*.cdn.example.com"),
    }
    base.update(kw)
    return ConnectorSettings(**base)  # type: ignore[arg-type]


def upsert(**content: object) -> SourceUpsert:
    return SourceUpsert(
        tenant_id="t", document_id="s:d", source_seq=1, meta=DocumentMeta(), **content
    )


async def obtain(fetcher: ContentFetcher, **content: object) -> bytes:
    return (await fetcher.obtain(upsert(**content))).data


async def code_of(fetcher: ContentFetcher, **content: object) -> str:
    with pytest.raises(QuarantineError) as info:
        await fetcher.obtain(upsert(**content))
    return info.value.reason_code


# ---------------------------------------------------------------- inline


async def test_inline_text_and_base64() -> None:
    f = ContentFetcher(cfg())
    assert await obtain(f, content_text="héllo") == "héllo".encode()
    assert await obtain(f, content_b64=base64.b64encode(b"\x00\x01").decode()) == b"\x00\x01"


async def test_inline_limits_and_bad_base64() -> None:
    f = ContentFetcher(cfg())
    assert await code_of(f, content_text="x" * 1001) == "oversize_document"
    assert (
        await code_of(f, content_b64=base64.b64encode(b"x" * 1001).decode()) == "oversize_document"
    )
    assert await code_of(f, content_b64="not base64!!") == "invalid_base64"
    assert len(await obtain(f, content_text="x" * 1000)) == 1000  # the limit itself is fine


# ---------------------------------------------------------------- files


def file_ref(path: Path | str) -> dict[str, object]:
    return {"content_ref": ContentRef(kind="file", location=str(path))}


async def test_file_under_allowed_root(tmp_path: Path) -> None:
    root = tmp_path / "share"
    root.mkdir()
    (root / "a.txt").write_bytes(b"file bytes")
    f = ContentFetcher(cfg(allowed_roots=(root,)))
    assert await obtain(f, **file_ref(root / "a.txt")) == b"file bytes"
    assert await obtain(f, **file_ref((root / "a.txt").as_uri())) == b"file bytes"


async def test_file_outside_roots_and_escapes(tmp_path: Path) -> None:
    root = tmp_path / "share"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    (root / "link.txt").symlink_to(secret)
    f = ContentFetcher(cfg(allowed_roots=(root,)))
    assert await code_of(f, **file_ref(secret)) == "fetch_path_not_allowed"
    assert await code_of(f, **file_ref(root / ".." / "secret.txt")) == "fetch_path_not_allowed"
    assert await code_of(f, **file_ref(root / "link.txt")) == "fetch_path_not_allowed"
    assert await code_of(f, **file_ref("relative/a.txt")) == "fetch_path_not_allowed"
    assert await code_of(f, **file_ref(root / "missing.txt")) == "fetch_not_found"
    assert await code_of(f, **file_ref(root)) == "fetch_not_a_file"


async def test_file_refs_refused_without_roots(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    f = ContentFetcher(cfg())
    assert await code_of(f, **file_ref(tmp_path / "a.txt")) == "fetch_path_not_allowed"


async def test_file_oversize(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * 1001)
    f = ContentFetcher(cfg(allowed_roots=(tmp_path,)))
    assert await code_of(f, **file_ref(tmp_path / "big.bin")) == "oversize_document"


# ---------------------------------------------------------------- http


def test_host_allow_list_patterns() -> None:
    allowed = ("docs.example.com", "*.cdn.example.com")
    assert host_allowed("docs.example.com", allowed)
    assert host_allowed("DOCS.example.com.", allowed)
    assert host_allowed("eu.cdn.example.com", allowed)
    assert not host_allowed("cdn.example.com", allowed)  # the wildcard needs a subdomain
    assert not host_allowed("evil-docs.example.com", allowed)
    assert not host_allowed("docs.example.com.evil.net", allowed)
    assert not host_allowed("anything", ())


def http_ref(url: str) -> dict[str, object]:
    return {"content_ref": ContentRef(kind="http", location=url)}


def fetcher_with(handler: httpx.MockTransport, **kw: object) -> ContentFetcher:
    return ContentFetcher(cfg(**kw), transport=handler)


async def test_http_fetch_follows_allowed_redirects_only() -> None:
    seen: list[str] = []

    def handle(req: httpx.Request) -> httpx.Response:
        seen.append(str(req.url))
        if req.url.path == "/moved":
            return httpx.Response(302, headers={"location": "https://eu.cdn.example.com/doc.pdf"})
        if req.url.path == "/escape":
            return httpx.Response(302, headers={"location": "https://evil.example.net/x"})
        return httpx.Response(200, content=b"%PDF-1.7 bytes")

    f = fetcher_with(httpx.MockTransport(handle))
    assert await obtain(f, **http_ref("https://docs.example.com/moved")) == b"%PDF-1.7 bytes"
    assert seen == ["https://docs.example.com/moved", "https://eu.cdn.example.com/doc.pdf"]
    assert (
        await code_of(f, **http_ref("https://docs.example.com/escape")) == "fetch_host_not_allowed"
    )
    assert "https://evil.example.net/x" not in seen  # refused before any request
    await f.close()


async def test_http_scheme_and_host_rules() -> None:
    f = fetcher_with(httpx.MockTransport(lambda r: httpx.Response(200, content=b"ok")))
    assert await code_of(f, **http_ref("http://docs.example.com/a")) == "fetch_scheme_not_allowed"
    assert await code_of(f, **http_ref("https://other.example.com/a")) == "fetch_host_not_allowed"
    assert await code_of(f, **http_ref("ftp://docs.example.com/a")) == "fetch_scheme_not_allowed"
    plain = fetcher_with(
        httpx.MockTransport(lambda r: httpx.Response(200, content=b"ok")), allow_plain_http=True
    )
    assert await obtain(plain, **http_ref("http://docs.example.com/a")) == b"ok"


async def test_http_statuses() -> None:
    status = {"/gone": 404, "/forbidden": 403, "/busy": 503, "/slow": 429}
    f = fetcher_with(
        httpx.MockTransport(lambda r: httpx.Response(status[r.url.path], content=b"err"))
    )
    assert await code_of(f, **http_ref("https://docs.example.com/gone")) == "fetch_not_found"
    assert await code_of(f, **http_ref("https://docs.example.com/forbidden")) == "fetch_http_status"
    for path in ("/busy", "/slow"):
        with pytest.raises(TransientError):
            await f.obtain(upsert(**http_ref(f"https://docs.example.com{path}")))


async def test_http_size_limits_declared_and_streamed() -> None:
    def handle(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/declared":
            return httpx.Response(200, headers={"content-length": "5000"}, content=b"x" * 5000)

        async def body():  # type: ignore[no-untyped-def]
            for _ in range(20):
                yield b"y" * 100

        return httpx.Response(200, content=body())

    f = fetcher_with(httpx.MockTransport(handle))
    assert await code_of(f, **http_ref("https://docs.example.com/declared")) == "oversize_document"
    assert await code_of(f, **http_ref("https://docs.example.com/stream")) == "oversize_document"


async def test_http_timeouts_and_connection_errors_are_transient() -> None:
    def handle(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/timeout":
            raise httpx.ReadTimeout("slow", request=req)
        raise httpx.ConnectError("refused", request=req)

    f = fetcher_with(httpx.MockTransport(handle))
    for path in ("/timeout", "/down"):
        with pytest.raises(TransientError):
            await f.obtain(upsert(**http_ref(f"https://docs.example.com{path}")))


async def test_too_many_redirects() -> None:
    def loop(req: httpx.Request) -> httpx.Response:
        return httpx.Response(301, headers={"location": "/again"})

    f = fetcher_with(httpx.MockTransport(loop), fetch_max_redirects=2)
    assert await code_of(f, **http_ref("https://docs.example.com/a")) == "fetch_too_many_redirects"
