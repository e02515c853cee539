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

from ragline.errors import ConfigError
from ragline.runtime.settings import Settings, get_settings

__all__ = ["PIPELINE", "PrivatePlatform", "private_platform"]

PIPELINE: tuple[str, ...] = (
    "connector",
    "parser",
    "scanner",
    "chunker",
    "enricher",
    "embedder",
    "indexer",
)


@dataclass(frozen=True, kw_only=True)
class PrivatePlatform:
    settings: Settings
    query_url: str
    jwt_secret: str
    log_dir: Path


@asynccontextmanager
async def private_platform(
    *,
    extra_env: Mapping[str, str] | None = None,
    keep_dir: bool = False,
    start_timeout_s: float = 300.0,
) -> AsyncIterator[PrivatePlatform]:
    """Start everything, yield where the query service listens, stop everything.

    ``extra_env`` is given to every service (e.g. ``RAGLINE_QUERY_MAX_TOP_K``). Service
    logs stay in the temp dir's ``logs/`` when ``keep_dir`` is true.
    """
    from ragline.runtime.stack import StackManager, StackSettings
    from ragline.runtime.stack.testing import (
        CLEARED_ENV,
        ServiceProcess,
        free_port,
        patched_environ,
        stack_env,
    )
    from ragline.runtime.supervisor import built_services

    built = built_services()
    missing = {n: why for n in (*PIPELINE, "query") if (why := built.get(n))}
    if missing:
        raise ConfigError(f"a private platform needs every pipeline service; not built: {missing}")
    base = Path(tempfile.mkdtemp(prefix="ragline-eval-"))
    secret = secrets.token_urlsafe(32)
    env = stack_env(base / "state")
    env.update({"RAGLINE_QUERY_JWT_SECRET": secret, **dict(extra_env or {})})
    procs: list[ServiceProcess] = []
    with patched_environ(env, remove=CLEARED_ENV):
        get_settings.cache_clear()
        settings = Settings()
        manager = StackManager(settings, StackSettings(), detached=False)
        try:
            await manager.up()
            for name in (*PIPELINE, "query"):
                procs.append(
                    ServiceProcess(
                        name,
                        env=dict(os.environ),
                        log_path=base / "logs" / f"{name}.log",
                        metrics_port=free_port(),
                        http_port=free_port(),
                    )
                )
            await asyncio.gather(
                *(asyncio.to_thread(p.wait_metrics, start_timeout_s) for p in procs[:-1])
            )
            yield PrivatePlatform(
                settings=settings,
                query_url=procs[-1].http_url,
                jwt_secret=secret,
                log_dir=base / "logs",
            )
        finally:
            await asyncio.gather(*(asyncio.to_thread(p.cleanup) for p in procs))
            await manager.down()
            get_settings.cache_clear()
            if not keep_dir:
                shutil.rmtree(base, ignore_errors=True)
