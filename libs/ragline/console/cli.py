"""``ragline console``: serve the operator console (docs/console.md).

The app is ``services/console`` (wiring), found through the ``ragline.tools`` entry
point, as ``ragline run`` finds services: the library never imports a service."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

__all__ = ["register", "serve"]


def serve(
    host: str | None = None, port: int | None = None, *, build: Callable[..., Any] | None = None
) -> int:
    """``build``: the service's ``build(settings)`` (default: the entry point's)."""
    from ragline.config import Settings
    from ragline.console.settings import ConsoleSettings
    from ragline.errors import ConfigError
    from ragline.runtime.http import make_server

    found = [ep.load() for ep in entry_points(group="ragline.tools") if ep.name == "console"]
    if build is not None:
        found = [build]
    if not found:
        print(
            "ragline console: the 'console' entry point is missing: reinstall ragline "
            "(pip install -e .) or run `python -m services.console`",
            file=sys.stderr,
        )
        return 2
    cs = ConsoleSettings()
    settings = Settings()
    if (settings.state_dir / "local.env").exists():
        # the local stack (`make up`): the same JWT secret the query service verifies
        # with; variables already set win, as for every service
        from ragline.platform.cli import local_secrets

        for k, v in local_secrets(settings).items():
            os.environ.setdefault(k, v)
    try:
        svc = found[0](settings)
    except ConfigError as exc:
        print(f"ragline console: {exc}", file=sys.stderr)
        return 2
    h, p = host or cs.host, port or cs.port
    print(
        f"operator console on http://{h}:{p}/console/login (sign in with an admin token:"
        " `ragline token --tenant T --groups G --admin T`)",
        file=sys.stderr,
    )
    server = make_server(svc.app, h, p, own_signals=True)
    asyncio.run(server.serve())
    return 0 if server.started else 1  # e.g. Postgres unreachable at start-up


def _run(args: argparse.Namespace) -> int:
    return serve(args.host, args.port)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "console",
        help="serve the operator console (admin tokens only; docs/console.md)",
        description="Search as a principal, why-not, documents, dead letters, pipeline "
        "and embedding spaces in the browser. Needs the admin DSN and the query "
        "service's JWT settings (RAGLINE_QUERY_JWT_*).",
    )
    p.add_argument("--host", default=None, help="default RAGLINE_CONSOLE_HOST (127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="default RAGLINE_CONSOLE_PORT (8085)")
    p.set_defaults(func=_run)
