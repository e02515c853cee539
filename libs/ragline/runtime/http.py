"""Serving an ASGI app inside a service process, under the runtime's signal handling."""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import uvicorn

__all__ = ["EmbeddedServer", "HttpService"]


@dataclass(kw_only=True)
class HttpService:
    """A service that is an HTTP API (the query service): ``build`` returns one."""

    name: str
    app: Any  # an ASGI application (FastAPI)


class EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the runtime owns SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def make_server(app: Any, host: str, port: int, *, own_signals: bool) -> uvicorn.Server:
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
    return uvicorn.Server(config) if own_signals else EmbeddedServer(config)
