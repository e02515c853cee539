"""``ragline run <service>``: find the service by entry point, run it until SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from importlib.metadata import entry_points
from typing import Any

from ragline.catalog import default_http_port, default_metrics_port
from ragline.config import Settings, TracingSettings
from ragline.errors import ConfigError
from ragline.runtime.consumer import StageRunner
from ragline.runtime.health import watch_broker
from ragline.runtime.http import HttpService, make_server
from ragline.runtime.lanes import LaneSettings
from ragline.runtime.logs import configure_logging
from ragline.runtime.metrics import SERVICE_UP, serve_metrics
from ragline.runtime.priority import install_lane_executor
from ragline.runtime.stage import Stage
from ragline.tracing import configure_tracing, trace_asgi

__all__ = ["http_port", "load_service", "metrics_port", "run_service"]


def metrics_port(name: str, settings: Settings) -> int:
    return settings.metrics_port or default_metrics_port(name)


def http_port(name: str, settings: Settings) -> int:
    return settings.http_port or default_http_port(name)


def load_service(name: str) -> Any:
    eps = {ep.name: ep for ep in entry_points(group="ragline.services")}
    if name not in eps:
        raise ConfigError(f"unknown service {name!r}; known: {', '.join(sorted(eps))}")
    try:
        return eps[name].load()
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"service {name!r} cannot be loaded ({exc.name} missing: an incomplete install?)"
        ) from exc


def _id_key(settings: Settings) -> str | None:
    key = settings.log_id_key
    return key.get_secret_value() if key is not None else None


async def _run_stage(
    stage: Stage[Any, Any], settings: Settings, tracing: TracingSettings, lanes: LaneSettings | None
) -> int:
    log = configure_logging(stage.name, settings.log_level, _id_key(settings))
    configure_tracing(stage.name, tracing)
    runner = StageRunner(stage, settings, log, lanes=lanes)
    loop = asyncio.get_running_loop()
    # bulk work handed to threads runs at a lower CPU priority (runtime/priority.py)
    install_lane_executor(loop, lanes.bulk_nice if lanes is not None else 0)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, runner.stopping.set)
    serve_metrics(metrics_port(stage.name, settings), settings.metrics_host, runner.health)
    beat_task = asyncio.create_task(runner.health.run())
    broker_task = asyncio.create_task(watch_broker(runner.health, settings.kafka_bootstrap))
    await stage.start()
    server = None
    server_task: asyncio.Task[None] | None = None
    app = stage.http_app()
    if app is not None:
        server = make_server(
            app, settings.http_host, http_port(stage.name, settings), own_signals=False
        )
        server_task = asyncio.create_task(server.serve())
    try:
        await runner.broker.start()
        SERVICE_UP.labels(stage.name).set(1)
        runner.health.consuming(True)
        lag_task = asyncio.create_task(runner.report_lag())
        log.info("started", extra={"fields": {"topics": list(stage.input_topics)}})
        await runner.stopping.wait()
        log.info("stopping")
        lag_task.cancel()
    finally:
        SERVICE_UP.labels(stage.name).set(0)
        runner.health.consuming(False)
        await runner.broker.stop()  # waits for the in-flight message (graceful_timeout)
        if server is not None and server_task is not None:
            server.should_exit = True
            await server_task
        await stage.stop()
        beat_task.cancel()
        broker_task.cancel()
        log.info("stopped", extra={"fields": {"fatal": runner.fatal is not None}})
    return 1 if runner.fatal is not None else 0


async def _run_http(svc: HttpService, settings: Settings, tracing: TracingSettings) -> int:
    log = configure_logging(svc.name, settings.log_level, _id_key(settings))
    configure_tracing(svc.name, tracing)
    app = trace_asgi(svc.app)
    # /metrics on its own port, as for the consumers: the NetworkPolicy can then let the
    # scrapers reach the metrics without opening the API port (and the API's Ingress
    # never publishes it)
    metrics = serve_metrics(metrics_port(svc.name, settings), settings.metrics_host)
    server = make_server(app, settings.http_host, http_port(svc.name, settings), own_signals=False)

    def _stop() -> None:
        server.should_exit = True

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, _stop)
    await server.serve()  # returns after draining in-flight requests
    metrics.shutdown()
    log.info("stopped")
    return 0


async def run_service(
    name: str, settings: Settings, tracing: TracingSettings, *, lanes: LaneSettings | None = None
) -> int:
    """Build service ``name`` from the settings its command read once, and run it."""
    build = load_service(name)
    service = build(settings)
    if isinstance(service, Stage):
        return await _run_stage(service, settings, tracing, lanes)
    if isinstance(service, HttpService):
        return await _run_http(service, settings, tracing)
    raise ConfigError(f"service {name!r} built an unknown kind of object: {type(service)!r}")
