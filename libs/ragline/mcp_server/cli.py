"""``ragline mcp``: run the MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    # the SDK loads only for this command: `ragline --help` stays fast
    from ragline.mcp_server.server import build_server
    from ragline.mcp_server.settings import McpSettings

    over: dict[str, Any] = {}
    for name in ("query_url", "host", "port", "call_budget"):
        value = getattr(args, name)
        if value is not None:
            over[name] = value
    settings = McpSettings(**over)
    query_auth = None
    if args.transport == "http":
        from ragline.retrieval.settings import QueryAuthSettings

        query_auth = QueryAuthSettings()
    server = build_server(settings, transport=args.transport, query_auth=query_auth)
    if args.transport == "stdio":
        server.run("stdio")
        return 0
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=settings.path, host=settings.host)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "mcp",
        help="MCP server for agents: search, get_document, document_status (docs/clients.md)",
        description="Serve ragline's search, get_document and document_status as MCP tools. "
        "stdio: the caller's token from RAGLINE_MCP_TOKEN(_FILE). http: every request "
        "carries the caller's bearer token (verified with RAGLINE_QUERY_JWT_*).",
    )
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--query-url", default=None, help="query service (RAGLINE_MCP_QUERY_URL)")
    p.add_argument("--host", default=None, help="http: bind address (RAGLINE_MCP_HOST)")
    p.add_argument("--port", type=int, default=None, help="http: port (RAGLINE_MCP_PORT)")
    p.add_argument("--call-budget", type=int, default=None, help="tool calls per session")
    p.set_defaults(func=_run)
