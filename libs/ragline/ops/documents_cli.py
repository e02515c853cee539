"""``ragline documents list|show|explain|reset-seq``: operator commands on single
documents. ``list``/``show`` read ``ragline.ops.doc_facts``; ``explain`` is
``ragline.ops.explain``, the same code as the console's why-not page; ``reset-seq`` is
the way out of a pinned sequence (``ragline.ops.seq_reset``). Exit codes: 0 done, 1 a
backend failed or no such document, 2 bad arguments. Reports go to stdout (``--json``
for machines).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from typing import Any

__all__ = ["register"]


def _reset(args: argparse.Namespace) -> int:
    import psycopg

    from ragline.config import Settings
    from ragline.errors import ConfigError, RaglineError
    from ragline.ops.seq_reset import reset_seq
    from ragline.store.pg_errors import pg_errors

    async def run() -> Any:
        with pg_errors():  # a driver message may quote the row: the class only
            async with await psycopg.AsyncConnection.connect(
                Settings().admin_dsn(), autocommit=True
            ) as conn:
                return await reset_seq(
                    conn,
                    tenant_id=args.tenant,
                    document_id=args.document,
                    to=args.to,
                    actor=args.actor or getpass.getuser(),
                    reason=args.reason,
                )

    try:
        report = asyncio.run(run())
    except ConfigError as exc:
        print(f"ragline documents reset-seq: {exc}", file=sys.stderr)
        return 2
    except RaglineError as exc:
        print(f"ragline documents reset-seq: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(
            f"{report.tenant_id}/{report.document_id}: source_seq {report.old_source_seq} -> "
            f"{min(report.old_source_seq or 0, report.new_seq)}, acl_seq {report.old_acl_seq}, "
            f"status seq {report.old_status_seq}; {report.ledger_entries_dropped} ledger "
            f"entries dropped; reset generation {report.seq_epoch} (events accepted before "
            "it are refused: re-feed the document with `ragline sync`); audited in seq_resets"
        )
        if report.refused_in_flight:
            print(
                f"refused in flight (accepted before the reset, not applied): "
                f"{', '.join(report.refused_in_flight)}; re-send the document with "
                "`ragline sync`"
                + (
                    " (its status says 'failed', reason_code reset_seq, until then)"
                    if set(report.refused_in_flight) & {"content", "delete"}
                    else ""
                )
            )
    return 0


def _no_readers(args: argparse.Namespace) -> int:
    """``ragline documents no-readers``: documents no group may read
    (``ragline.ops.no_readers``)."""
    import psycopg

    from ragline.config import Settings
    from ragline.errors import RaglineError
    from ragline.ops.no_readers import list_no_readers
    from ragline.store.pg_errors import pg_errors

    async def run() -> Any:
        with pg_errors():
            async with await psycopg.AsyncConnection.connect(
                Settings().admin_dsn(), autocommit=True
            ) as conn:
                return await list_no_readers(
                    conn, args.tenant, source=args.source, limit=args.limit
                )

    try:
        rows = asyncio.run(run())
    except RaglineError as exc:
        print(f"ragline documents no-readers: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([r.to_json() for r in rows], indent=2))
        return 0
    for r in rows:
        print(f"{r.status}  {r.pipeline_status:<8}  {r.document_id}  {r.title or ''}".rstrip())
    print(
        f"{len(rows)} document{'s' if len(rows) != 1 else ''} of tenant {args.tenant} "
        "readable by nobody (no acl_groups)"
        + (
            ": give them readers with a _policy.yaml (acl_groups) in their folder, or "
            "`ragline sync <dir> --default-groups <group>`"
            if rows
            else ""
        )
    )
    return 0


def register(sub: Any) -> None:
    docs = sub.add_parser("documents", help="operator commands on single documents")
    actions = docs.add_subparsers(dest="documents_command", required=True)
    from ragline.ops.documents_read_cli import register_read

    register_read(actions)
    p = actions.add_parser(
        "reset-seq",
        help="move a document's source_seq back (e.g. after a bogus 2^63-1), audited",
        description="Lowers documents.source_seq/acl_seq, the status row's and a parked ACL "
        "change's seq to --to (never raises them) and drops the document's ledger entries "
        "above it, in one transaction under the document lock; records actor and reason in "
        "the seq_resets table. Content stays until the next change above --to replaces it.",
    )
    p.add_argument("--tenant", required=True)
    p.add_argument("--document", required=True, help="the document id, <source>:<id>")
    p.add_argument("--to", type=int, required=True, metavar="SEQ", help="the new sequence")
    p.add_argument("--reason", required=True, help="why (audited)")
    p.add_argument("--actor", default=None, help="who (audited; default: the OS user)")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.set_defaults(func=_reset)

    nr = actions.add_parser(
        "no-readers",
        help="documents no group may read (indexed or on their way with no acl_groups)",
        description="Lists the tenant's documents whose ACL is empty: deny by default "
        "keeps them out of every answer. Status no_readers; pipeline status indexed or "
        "accepted (on its way).",
    )
    nr.add_argument("--tenant", required=True)
    nr.add_argument("--source", default=None, help="only documents '<source>:...'")
    nr.add_argument("--limit", type=int, default=1000)
    nr.add_argument("--json", action="store_true", help="machine-readable list")
    nr.set_defaults(func=_no_readers)
