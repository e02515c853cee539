"""``ragline query-audit sweep``: delete audit rows older than the retention (admin DSN)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.retrieval.audit import sweep_audit
from ragline.retrieval.settings import AuditSettings

__all__ = ["register"]


def _sweep(args: argparse.Namespace) -> int:
    days = args.retention_days or AuditSettings().audit_retention_days
    try:
        deleted = sweep_audit(Settings().admin_dsn(), days)
    except RaglineError as exc:
        print(f"ragline query-audit sweep: {exc}", file=sys.stderr)
        return 1
    print(f"deleted {deleted} audit rows older than {days} days")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("query-audit", help="query audit trail maintenance")
    inner = p.add_subparsers(dest="audit_command", required=True)
    sweep = inner.add_parser("sweep", help="delete rows older than the retention")
    sweep.add_argument(
        "--retention-days",
        type=int,
        default=None,
        help="default: RAGLINE_QUERY_AUDIT_RETENTION_DAYS (90)",
    )
    sweep.set_defaults(func=_sweep)
