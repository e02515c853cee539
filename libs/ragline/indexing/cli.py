"""``ragline reindex opensearch [--tenant T]`` and ``ragline repair [--tenant T] [--deep]``.

Both read Postgres (the truth) and write OpenSearch; progress bars go to stderr.
Exit codes: 0 done, 1 a backend failed (the message says which), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from tqdm import tqdm

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.indexing.os_sync import OsSyncer
from ragline.indexing.repair import Repairer
from ragline.indexing.settings import IndexerSettings
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool

__all__ = ["register"]


async def _with_repairer(settings: Settings, job: Any) -> int:
    config = IndexerSettings()
    pool = await open_pool(settings.admin_dsn(), name="repair", max_size=2)
    client = make_client(settings, timeout_s=config.os_timeout_s)
    try:
        syncer = OsSyncer(
            client,
            index_prefix=settings.opensearch_index_prefix,
            refresh=config.os_refresh,
            bulk_size=config.os_bulk_size,
        )
        result: int = await job(Repairer(pool, client, syncer))
        return result
    finally:
        await client.close()
        await pool.close()


async def _reindex(args: argparse.Namespace, settings: Settings) -> int:
    async def job(rep: Repairer) -> int:
        tenants = [args.tenant] if args.tenant else await rep.tenants()
        for tenant in tenants:
            total = await rep.count_documents(tenant, live_only=True)
            with tqdm(
                total=total, desc=f"reindex {tenant}", unit="doc", disable=args.no_progress
            ) as bar:
                report = await rep.reindex(tenant, progress=bar.update)
            print(
                f"{tenant}: {report.documents} documents, {report.chunks} chunks -> "
                f"{report.index} (live); {report.resynced} re-synced before the flip; "
                f"kept for rollback: {', '.join(report.rollback) or 'none'}; "
                f"deleted {len(report.dropped)} older rollback index(es)"
            )
        return 0

    return await _with_repairer(settings, job)


async def _repair(args: argparse.Namespace, settings: Settings) -> int:
    async def job(rep: Repairer) -> int:
        total = await rep.count_documents(args.tenant, live_only=False) if args.deep else None
        with tqdm(total=total, desc="repair", unit="doc", disable=args.no_progress) as bar:
            report = await rep.repair(args.tenant, deep=args.deep, progress=bar.update)
        print(
            f"lagging {report.lagging}, mismatched {report.mismatched}, "
            f"orphans {report.orphans}, synced {report.synced}"
        )
        return 0

    return await _with_repairer(settings, job)


def _runner(fn: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(asyncio.run(fn(args, Settings())))
        except RaglineError as exc:
            print(f"ragline {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1

    return run


def register(sub: Any) -> None:
    p = sub.add_parser("reindex", help="rebuild a derived index from Postgres")
    targets = p.add_subparsers(dest="target", required=True)
    o = targets.add_parser(
        "opensearch", help="rebuild the OpenSearch index of every (or one) tenant, then swap"
    )
    o.add_argument("--tenant", help="only this tenant")
    o.add_argument("--no-progress", action="store_true", help="no progress bar")
    o.set_defaults(func=_runner(_reindex))

    r = sub.add_parser(
        "repair", help="bring OpenSearch documents whose generation lags Postgres up to date"
    )
    r.add_argument("--tenant", help="only this tenant")
    r.add_argument(
        "--deep",
        action="store_true",
        help="also compare every document's chunks in OpenSearch with Postgres (slow)",
    )
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.set_defaults(func=_runner(_repair))
