"""A pipeline service as its own process for the benchmarks (free ports, log under
``base``, this process's environment)."""

from __future__ import annotations

import os
from pathlib import Path

from ragline.platform.stack.testing import ServiceProcess, free_port

REPO = Path(__file__).resolve().parents[1]


def service(name: str, base: Path, log_name: str | None = None) -> ServiceProcess:
    """``ragline run <name>`` with its output in ``base/<log_name or name>.log``."""
    return ServiceProcess(
        name,
        env=dict(os.environ),
        log_path=base / f"{log_name or name}.log",
        metrics_port=free_port(),
        http_port=free_port(),
        cwd=REPO,
    )
