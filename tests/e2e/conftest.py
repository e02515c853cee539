"""End-to-end fixtures: every service as its own process on the session's stack."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ragline.catalog import SERVICES
from ragline.config import Settings
from ragline.platform.stack.testing import ServiceProcess, free_port, stop_all
from ragline.runtime.lag import wait_drained

REPO_ROOT = Path(__file__).resolve().parents[2]

# a small interactive budget per tenant (docs/lanes.md, "Tenant fairness") so that
# test_fairness.py floods with a few dozen documents, not thousands; a test that
# publishes more than a few interactive upserts at once for one tenant sees the rest
# travel in the bulk lane (same results, after the interactive work)
FAIR_BURST = 5
CONNECTOR_ENV = {
    "RAGLINE_CONNECTOR_TENANT_INTERACTIVE_BURST": str(FAIR_BURST),
    "RAGLINE_CONNECTOR_TENANT_INTERACTIVE_RATE": "0.5",
}
# the golden and canary tests ask hundreds of questions as a few subjects: no rate limit
# (it has tests of its own, tests/integration/query/test_degraded.py)
QUERY_ENV = {"RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0"}


@dataclass
class Pipeline:
    settings: Settings
    jwt_secret: str
    services: dict[str, ServiceProcess] = field(default_factory=dict)

    @property
    def query_url(self) -> str:
        return self.services["query"].http_url

    def logs(self) -> str:
        return "\n".join(p.log() for p in self.services.values())


def sync_source(root: Path, tenant: str) -> None:
    """``ragline sync`` of a folder into ``tenant`` (the filesystem source's way in), as
    source ``fs``; deletes allowed (docs/connector.md, "Deletes a sync refuses")."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ragline.cli",
            "sync",
            str(root),
            "--tenant",
            tenant,
            "--source",
            "fs",
            "--allow-deletes",  # the tests delete files on purpose (a guard of its own)
            "--no-progress",
        ],
        check=True,
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=120,
    )


async def quiesce(pipe: Pipeline, timeout_s: float = 120.0) -> None:
    """Every ``doc.indexed`` published (the indexer commits only after Postgres, OpenSearch
    and the event) and applied by the cache invalidator. A document row says ``indexed``
    a moment before its OpenSearch copy exists, and until the invalidator has caught up a
    late fence may (correctly) refuse to store a search; waiting makes such checks exact
    on fast machines."""
    lags = await wait_drained(pipe.settings, ["indexer", "cache_invalidator"], timeout_s=timeout_s)
    behind = {x.stage: x.total for x in lags if x.total}
    assert not behind, f"still behind after {timeout_s:.0f} s: {behind}"


@pytest.fixture(scope="session")
def pipeline(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    jwt_secret = secrets.token_urlsafe(32)
    os.environ["RAGLINE_QUERY_JWT_SECRET"] = jwt_secret
    os.environ["RAGLINE_EVAL_JWT_SECRET"] = jwt_secret
    logs = tmp_path_factory.mktemp("pipeline-logs")
    pipe = Pipeline(settings=stack, jwt_secret=jwt_secret)
    try:
        for name in SERVICES:
            env = dict(os.environ)
            if name == "connector":
                env = {**CONNECTOR_ENV, **env}  # the environment may still override
            elif name == "query":
                env = {**QUERY_ENV, **env}
            pipe.services[name] = ServiceProcess(
                name,
                env=env,
                log_path=logs / f"{name}.log",
                metrics_port=free_port(),
                http_port=free_port(),
                cwd=REPO_ROOT,
            )
        for name, proc in pipe.services.items():
            if name == "query":
                proc.wait_ready(timeout_s=180)
            else:
                proc.wait_metrics(timeout_s=180)
        yield pipe
    finally:
        stop_all(pipe.services.values())
