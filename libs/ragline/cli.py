"""The ``ragline`` command. Each domain contributes its subcommands through a
``register(subparsers)`` function in its own ``cli`` module, listed in ``COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["COMMAND_MODULES", "main"]

# one line per domain; each module defines `register(subparsers) -> None`
COMMAND_MODULES: tuple[str, ...] = (
    "ragline.runtime.run_cli",
    "ragline.runtime.contracts_cli",
    "ragline.platform.cli",
    "ragline.platform.stack_cli",
    "ragline.connector.cli",
    "ragline.evaluation.cli",
    "ragline.indexing.cli",
    "ragline.ops.cli",
    "ragline.ops.retention_cli",
    "ragline.ops.documents_cli",
    "ragline.evaluation.spaces_cli",
    "ragline.cache.cli",
    "ragline.retrieval.cli",
    "ragline.scanning.cli",
    "ragline.platform.preview_cli",
    "ragline.mcp_server.cli",
    "ragline.console.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragline", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    rc = args.func(args)
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
