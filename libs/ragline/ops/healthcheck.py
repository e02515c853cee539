"""The container's health probe: ``python -m ragline.ops.healthcheck`` (Dockerfile
HEALTHCHECK). Standard library only (``ragline.catalog`` is too), so a probe costs
milliseconds, not a second of imports. It reads which role the container runs from
PID 1's command line (``ragline run <service>``) and asks that role's real endpoint:
the query service's ``/healthz``, every other service's ``/healthz`` on its metrics port
(answered from the consumer's event loop progress, runtime/health.py, not just the
metrics thread).
One-shot commands (``ragline migrate``) have nothing to probe and count as healthy.
Kubernetes ignores HEALTHCHECK and uses the chart's probes, which hit the same endpoints.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from ragline.catalog import HTTP_PORTS, HTTP_SERVICES, SERVICES, default_metrics_port

__all__ = ["main", "probe_url"]


def probe_url(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The URL to probe for a process started with ``argv``; None: nothing to probe."""
    if env.get("RAGLINE_HEALTHCHECK_URL"):
        return env["RAGLINE_HEALTHCHECK_URL"]
    args = list(argv)
    if "run" not in args or args.index("run") + 1 >= len(args):
        return None
    service = args[args.index("run") + 1]
    if service not in SERVICES:
        return None
    if service in HTTP_SERVICES:
        port = env.get("RAGLINE_HTTP_PORT") or str(HTTP_PORTS[service])
        return f"http://127.0.0.1:{port}/healthz"
    port = env.get("RAGLINE_METRICS_PORT") or str(default_metrics_port(service))
    return f"http://127.0.0.1:{port}/healthz"


def _pid1_argv() -> list[str]:
    try:
        raw = Path("/proc/1/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def _healthy(target: str) -> bool:
    try:
        with urllib.request.urlopen(target, timeout=3) as resp:  # noqa: S310 - our URLs
            return 200 <= int(resp.status) < 300
    except OSError as exc:
        print(f"unhealthy: {target}: {type(exc).__name__}", file=sys.stderr)
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """0 when every probed URL answers 2xx (``RAGLINE_HEALTHCHECK_URL`` may list several,
    comma-separated: the chart's ``helm test`` Pod asks every service at once)."""
    target = probe_url(list(argv) if argv else _pid1_argv(), os.environ)
    if target is None:
        return 0
    results = [_healthy(u.strip()) for u in target.split(",") if u.strip()]
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
