"""``ragline schemas [--check]``: regenerate schemas/ and docs/asyncapi.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragline.runtime.contracts import write_contracts

__all__ = ["register"]


def _schemas(args: argparse.Namespace) -> int:
    stale = write_contracts(Path(args.schemas_dir), Path(args.docs_dir), check=args.check)
    if args.check and stale:
        print("stale contracts (run `make schemas`):", *stale, sep="\n  ", file=sys.stderr)
        return 1
    print("contracts up to date" if args.check else f"wrote contracts ({len(stale)} changed)")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("schemas", help="generate JSON Schemas and the AsyncAPI document")
    p.add_argument("--check", action="store_true", help="fail if the committed files are stale")
    p.add_argument("--schemas-dir", default="schemas")
    p.add_argument("--docs-dir", default="docs")
    p.set_defaults(func=_schemas)
