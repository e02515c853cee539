"""The image's health probe targets the endpoints the runtime really serves."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ragline.ops.healthcheck import main, probe_url


@pytest.mark.parametrize(
    ("argv", "env", "url"),
    [
        (["/app/bin/ragline", "run", "query"], {}, "http://127.0.0.1:8080/healthz"),
        (
            ["ragline", "run", "query"],
            {"RAGLINE_HTTP_PORT": "9000"},
            "http://127.0.0.1:9000/healthz",
        ),
        (["python", "-m", "ragline.cli", "run", "parser"], {}, "http://127.0.0.1:9401/healthz"),
        (
            ["ragline", "run", "indexer"],
            {"RAGLINE_METRICS_PORT": "9400"},
            "http://127.0.0.1:9400/healthz",
        ),
        (["ragline", "run", "connector"], {}, "http://127.0.0.1:9400/healthz"),
        (["ragline", "migrate"], {}, None),
        (["ragline", "run"], {}, None),
        (["ragline", "run", "nope"], {}, None),
        (["ragline", "migrate"], {"RAGLINE_HEALTHCHECK_URL": "http://x/y"}, "http://x/y"),
    ],
)
def test_probe_url(argv: list[str], env: dict[str, str], url: str | None) -> None:
    assert probe_url(argv, env) == url


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 503)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    srv = HTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_main_probes(server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLINE_METRICS_PORT", str(server))
    monkeypatch.delenv("RAGLINE_HEALTHCHECK_URL", raising=False)
    assert main(["ragline", "run", "parser"]) == 0
    monkeypatch.setenv("RAGLINE_HEALTHCHECK_URL", f"http://127.0.0.1:{server}/metrics")
    assert main(["ragline", "run", "query"]) == 1  # only /healthz answers 200 here
    monkeypatch.delenv("RAGLINE_HEALTHCHECK_URL")
    assert main(["ragline", "migrate"]) == 0


def test_main_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragline.platform.stack.testing import free_port

    monkeypatch.setenv("RAGLINE_METRICS_PORT", str(free_port()))
    monkeypatch.delenv("RAGLINE_HEALTHCHECK_URL", raising=False)
    assert main(["ragline", "run", "parser"]) == 1
