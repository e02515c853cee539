"""A private, throw-away platform for one evaluation run: its own stack (Postgres +
pgvector, the broker, the OpenSearch server) in a temp dir on free ports, and every
pipeline service plus the query service as their own processes.

It lets ``make eval-scifact`` and ``ragline eval --private-stack`` measure from a clean
slate without touching (or depending on) a stack started with ``make up``.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragline.catalog import SERVICES
from ragline.config import Settings

__all__ = ["PIPELINE", "PrivatePlatform", "private_platform"]

# the catalog's services up to the indexer (no answer cache, no query API of its own)
PIPELINE: tuple[str, ...] = SERVICES[: SERVICES.index("indexer") + 1]


@dataclass(kw_only=True)
class PrivatePlatform:
    settings: Settings
    query_url: str
    jwt_secret: str
    log_dir: Path
    _query: Any = None  # the query service's ServiceProcess
    _restarts: int = 0

    async def restart_query(self, env: Mapping[str, str]) -> str:
        """Restart only the query service with ``env`` on top of the platform's (for
        tuning its knobs without re-ingesting); returns its new base URL."""
        from ragline.platform.stack.testing import ServiceProcess, free_port

        old = self._query
        await asyncio.to_thread(old.cleanup)
        self._restarts += 1
        self._query = ServiceProcess(
            "query",
            env={**os.environ, **dict(env)},
            log_path=self.log_dir / f"query-{self._restarts}.log",
            metrics_port=free_port(),
            http_port=free_port(),
        )
        self.query_url = self._query.http_url
        return self.query_url


@asynccontextmanager
async def private_platform(
    *,
    extra_env: Mapping[str, str] | None = None,
    query_env: Mapping[str, str] | None = None,
    keep_dir: bool = False,
    start_timeout_s: float = 300.0,
) -> AsyncIterator[PrivatePlatform]:
    """Start everything, yield where the query service listens, stop everything.

    ``extra_env`` is given to every service, ``query_env`` on top of it to the query
    service only (e.g. ``RAGLINE_QUERY_MAX_TOP_K``). Service logs stay in the temp dir's
    ``logs/`` when ``keep_dir`` is true.
    """
    from ragline.platform.stack import StackManager, StackSettings
    from ragline.platform.stack.testing import (
        CLEARED_ENV,
        ServiceProcess,
        free_port,
        patched_environ,
        stack_env,
    )

    base = Path(tempfile.mkdtemp(prefix="ragline-eval-"))
    secret = secrets.token_urlsafe(32)
    env = stack_env(base / "state")
    env.update({"RAGLINE_QUERY_JWT_SECRET": secret, **dict(extra_env or {})})
    procs: list[ServiceProcess] = []
    platform: PrivatePlatform | None = None
    with patched_environ(env, remove=CLEARED_ENV):
        settings = Settings()
        manager = StackManager(settings, StackSettings(), detached=False)
        try:
            await manager.up()
            for name in (*PIPELINE, "query"):
                own = dict(query_env or {}) if name == "query" else {}
                procs.append(
                    ServiceProcess(
                        name,
                        env={**os.environ, **own},
                        log_path=base / "logs" / f"{name}.log",
                        metrics_port=free_port(),
                        http_port=free_port(),
                    )
                )
            await asyncio.gather(
                *(asyncio.to_thread(p.wait_metrics, start_timeout_s) for p in procs[:-1])
            )
            platform = PrivatePlatform(
                settings=settings,
                query_url=procs[-1].http_url,
                jwt_secret=secret,
                log_dir=base / "logs",
                _query=procs[-1],
            )
            yield platform
        finally:
            if procs and platform is not None:
                procs[-1] = platform._query
            await asyncio.gather(*(asyncio.to_thread(p.cleanup) for p in procs))
            await manager.down()
            if not keep_dir:
                shutil.rmtree(base, ignore_errors=True)
