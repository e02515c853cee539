"""``ragline mcp``: search, get-document and document-status as MCP tools for agents.

Built on the official ``mcp`` SDK and ragline-client. Every call runs as its caller (the
verified bearer token over HTTP, the configured token over stdio), within a per-session
call budget and a result-size cap, and returns evidence with citations and the
untrusted-content flags marked (docs/clients.md).
"""

from ragline.mcp_server.server import build_server
from ragline.mcp_server.settings import McpSettings

__all__ = ["McpSettings", "build_server"]
