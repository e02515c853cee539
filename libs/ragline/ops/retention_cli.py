"""``ragline gc``: the retention sweeps of ``ragline.ops.retention``.

Exit codes (as ``ragline dlq``): 0 done, 1 a backend failed (the report says which
table), 2 bad arguments or settings. Progress goes to stderr; the report to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from pydantic import ValidationError

from ragline.errors import RaglineError

__all__ = ["TABLES", "register"]

# the values of ragline.ops.retention.Table, spelled out so `ragline --help` does not
# import the Kafka client (a unit test keeps them in step)
TABLES = ("claim_checks", "processed_events", "embedding_cache")


def _print(report: Any) -> None:
    verb = "would delete" if report.dry_run else "deleted"
    for t in report.tables:
        n = t.eligible if report.dry_run else t.deleted
        line = f"{t.table:<18} {verb} {n:>10,}   ({t.rule})"
        if t.kept_referenced:
            line += f"; kept {t.kept_referenced:,} referenced by pending dead letters"
        if t.error:
            line += f"   FAILED: {t.error}"
        print(line)
    if report.dead_letters_scanned is not None:
        print(f"pending dead letters read: {report.dead_letters_scanned:,}")
    if report.dry_run:
        print("dry run: nothing deleted")


def _gc(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ragline.config import Settings
    from ragline.ops.cli import _quiet
    from ragline.ops.retention import RetentionSettings, Table, run_gc
    from ragline.ops.settings import OpsSettings

    _quiet()
    try:
        overrides = {"batch_size": args.batch_size} if args.batch_size is not None else {}
        cfg = RetentionSettings(**overrides)
        settings = Settings()
        ops = OpsSettings()
    except ValidationError as exc:
        print(f"ragline gc: invalid settings: {exc}", file=sys.stderr)
        return 2
    tables = [Table(t) for t in args.table] if args.table else list(Table)
    with tqdm(desc="gc", unit="row", disable=args.no_progress, file=sys.stderr) as bar:

        def progress(table: str, n: int) -> None:
            bar.set_postfix_str(table, refresh=False)
            bar.update(n)

        try:
            report = asyncio.run(
                run_gc(
                    settings,
                    retention=cfg,
                    ops=ops,
                    tables=tables,
                    dry_run=args.dry_run,
                    progress=progress,
                )
            )
        except RaglineError as exc:
            print(f"ragline gc: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print(report)
    return 0 if report.ok else 1


def register(sub: Any) -> None:
    p = sub.add_parser(
        "gc",
        help="retention sweeps: claim checks, indexer ledger, embedding cache",
        description="Delete old claim checks (keeping those pending dead letters need), old "
        "indexer ledger rows and stale embedding-cache rows, in small batches. Rules come "
        "from RAGLINE_RETENTION_* (docs/operations.md, Retention). Runs as the admin DSN.",
    )
    p.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        metavar="N",
        help="rows per transaction (default RAGLINE_RETENTION_BATCH_SIZE, 1000)",
    )
    p.add_argument(
        "--table",
        action="append",
        choices=TABLES,
        help="sweep only this table (repeatable; default: all)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_gc)
