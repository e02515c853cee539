"""``ragline run <service>`` and ``ragline services``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from ragline.catalog import SERVICES
from ragline.config import Settings, TracingSettings
from ragline.errors import ConfigError
from ragline.runtime.lanes import LaneSettings
from ragline.runtime.service_main import run_service

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(
            run_service(args.service, Settings(), TracingSettings(), lanes=LaneSettings())
        )
    except ConfigError as exc:
        print(f"ragline run: {exc}", file=sys.stderr)
        return 2


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run one service until SIGTERM")
    p.add_argument("service", choices=SERVICES)
    p.set_defaults(func=_run)
