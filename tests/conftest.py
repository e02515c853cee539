"""Shared fixtures.

``stack``: one real stack per test session (PostgreSQL 18 + pgvector, the Kafka-protocol
broker, the OpenSearch-API server) on free ports in a temp dir, started by the same code
as ``ragline stack up`` and only when a test asks for it. It sets the ``RAGLINE_*``
variables in ``os.environ`` (subprocesses inherit them), applies migrations, creates the
topics and returns the ``Settings``.

``service_process``: start ``python -m ragline.cli run <name>`` against that stack.
``tenant``: a tenant id unique to the test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import hypothesis
import pytest
import pytest_asyncio

from ragline.config import Settings
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.testing import (
    CLEARED_ENV,
    ServiceProcess,
    free_port,
    make_test_stack_dir,
    patched_environ,
    reap_stale_test_stacks,
    stack_env,
    stop_all,
    unique_tenant,
)

REPO_ROOT = Path(__file__).resolve().parent.parent

# The suite runs on the deployed default backend, onnx-int8 (issue 34: the lean install
# has no torch). Tests of the torch backend and the live sentence-transformers reference
# are marked `torch` (tests/unit/embedding/test_onnx_reference.py; `make test-torch`):
# skipped where the torch extra is absent, unless RAGLINE_REQUIRE_TORCH=1 (`make test`,
# `make test-torch`) makes a missing torch an error instead.
os.environ.setdefault("RAGLINE_EMBEDDER_BACKEND", "onnx-int8")


def _torch_extra_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("torch", "sentence_transformers"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [item for item in items if item.get_closest_marker("torch")]
    if not marked or _torch_extra_installed():
        return
    if os.environ.get("RAGLINE_REQUIRE_TORCH") == "1":
        raise pytest.UsageError(
            f"{len(marked)} tests need the torch extra and RAGLINE_REQUIRE_TORCH=1: "
            "pip install -e '.[torch]' (make install-torch)"
        )
    skip = pytest.mark.skip(reason="needs the torch extra (make test-torch)")
    for item in marked:
        item.add_marker(skip)


# Property tests check properties, not speed: hypothesis' default 200 ms deadline per
# example made them fail at random on a loaded 2-core machine (a slow example is not a
# counter-example). Timing is measured by `make bench`, never asserted in tests. A test
# that sets its own deadline or example count keeps it.
hypothesis.settings.register_profile("ragline", deadline=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ragline"))


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def stack() -> AsyncIterator[Settings]:
    # not under pytest's basetemp: a concurrent pytest run prunes old basetemps and
    # would delete the live data directory of this session's Postgres
    await reap_stale_test_stacks()  # left behind by killed sessions
    base = make_test_stack_dir()
    env = stack_env(base / "state")
    try:
        with patched_environ(env, remove=CLEARED_ENV):
            settings = Settings()
            # detached=False: the servers stay tied to this pytest process
            manager = StackManager(settings, StackSettings(), detached=False)
            try:
                await manager.up()
                yield settings
            finally:
                await manager.down()
    finally:
        if not os.environ.get("RAGLINE_TEST_KEEP_STACK"):
            shutil.rmtree(base, ignore_errors=True)


ServiceFactory = Callable[..., ServiceProcess]


@pytest.fixture
def service_process(stack: Settings, tmp_path: Path) -> Iterator[ServiceFactory]:
    """``start(name, env={...}) -> ServiceProcess``; every process is ended after the test.

    Each gets free metrics and HTTP ports (``RAGLINE_METRICS_PORT``/``RAGLINE_HTTP_PORT``)
    and logs to ``tmp_path/<name>-<n>.log``.
    """

    started: list[ServiceProcess] = []

    def start(name: str, *, env: dict[str, str] | None = None) -> ServiceProcess:
        full_env = dict(os.environ)
        full_env.update(env or {})
        proc = ServiceProcess(
            name,
            env=full_env,
            log_path=tmp_path / f"{name}-{len(started)}.log",
            metrics_port=free_port(),
            http_port=free_port(),
            cwd=REPO_ROOT,
        )
        started.append(proc)
        return proc

    yield start
    stop_all(started)


@pytest.fixture
def tenant() -> str:
    """A tenant id no other test uses."""
    return unique_tenant()


PollProbe = Callable[[ModuleType, str, str], list[object]]


@pytest.fixture
def poll_probe(monkeypatch: pytest.MonkeyPatch) -> PollProbe:
    """For a stage module: its per-document function ``name`` fails the document
    ``broken`` (a ValueError), and its ``asyncio.to_thread`` calls are recorded in the
    list returned. The chunker's and the enricher's one-thread-call-per-poll tests."""

    def install(module: ModuleType, name: str, broken: str) -> list[object]:
        real, real_to_thread = getattr(module, name), module.asyncio.to_thread
        calls: list[object] = []

        def failing(event: Any, *args: Any) -> Any:
            if event.document_id == broken:
                raise ValueError("boom")
            return real(event, *args)

        async def counting(fn: Callable[..., Any], /, *args: Any) -> Any:
            calls.append(fn)
            return await real_to_thread(fn, *args)

        monkeypatch.setattr(module, name, failing)
        monkeypatch.setattr(module.asyncio, "to_thread", counting)
        return calls

    return install
