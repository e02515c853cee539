"""The OpenSearch-API server: the local one is osmem-server (in-memory); the probe uses
opensearch-py's cluster health, so a real cluster passes it the same way.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from urllib.parse import urlsplit

from opensearchpy import OpenSearch
from opensearchpy.exceptions import OpenSearchException

from ragline.config import Settings
from ragline.errors import ConfigError
from ragline.platform.stack.base import Health, LocalOptions, LocalProcessServer, Probe
from ragline.platform.stack.settings import Component

__all__ = ["LocalOpenSearch", "opensearch_probe", "osmem_binary"]


def osmem_binary() -> Path:
    """The osmem-server executable bundled in its wheel (or ``OSMEM_SERVER_BIN``)."""
    import osmem_server  # imported when needed: it only locates a binary

    path = Path(osmem_server.resolve_binary())
    if not os.access(path, os.X_OK):
        raise ConfigError(f"osmem-server binary is not executable: {path}")
    return path


def _health(settings: Settings, timeout_s: float) -> Health:
    auth = None
    if settings.opensearch_user is not None:
        pw = settings.opensearch_password
        auth = (settings.opensearch_user, pw.get_secret_value() if pw is not None else "")
    client = OpenSearch(
        hosts=[settings.opensearch_url], http_auth=auth, timeout=timeout_s, max_retries=0
    )
    try:
        health = client.cluster.health()
    except (OpenSearchException, OSError) as exc:
        return Health(ok=False, detail=f"opensearch: {type(exc).__name__}")
    finally:
        client.close()
    status = str(health.get("status", "unknown"))
    return Health(ok=status in {"green", "yellow"}, detail=f"cluster {status}")


class _QuietHealthPolls(logging.Filter):
    """opensearch-py logs every refused connection as a WARNING with a traceback; a
    health probe of a server that is still starting refuses by design."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "/_cluster/health" not in record.getMessage()


_QUIET = _QuietHealthPolls()


def opensearch_probe(settings: Settings) -> Probe:
    """Healthy when ``GET /_cluster/health`` answers green or yellow."""
    logger = logging.getLogger("opensearch")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)

    async def probe(timeout_s: float) -> Health:
        return await asyncio.to_thread(_health, settings, timeout_s)

    return probe


class LocalOpenSearch(LocalProcessServer):
    component = Component.OPENSEARCH
    executable_name = "osmem-server"

    def __init__(self, settings: Settings, options: LocalOptions, *, japanese: bool) -> None:
        url = urlsplit(settings.opensearch_url)
        if url.scheme != "http" or url.hostname is None or url.port is None or url.path.strip("/"):
            raise ConfigError(
                f"RAGLINE_OPENSEARCH_URL={settings.opensearch_url!r}: the local stack needs "
                "http://host:port to listen on"
            )
        self.listen = f"{url.hostname}:{url.port}"
        self.address = settings.opensearch_url
        self.japanese = japanese
        super().__init__(opensearch_probe(settings), options)

    def argv(self) -> tuple[str, ...]:
        args = [str(osmem_binary()), "-addr", self.listen, "-no-stdin-watch"]
        if not self.japanese:
            args.append("-no-ja")
        if not self.options.detached:  # tests: die with the process that started it
            args += ["-parent-pid", str(os.getpid())]
        return tuple(args)
