"""``ragline sync`` (reconcile a source with Postgres) and ``ragline watch`` (run the
filesystem source's polling watcher)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ragline.config import Settings
from ragline.connector.fs_source import FilesystemSource, FsSourceConfig, derive_source_name
from ragline.connector.readers import no_readers_report
from ragline.connector.settings import ConnectorSettings
from ragline.errors import ConfigError, RaglineError
from ragline.events import DocumentMeta

__all__ = ["register"]


def _add_source_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("root", type=Path, help="directory tree of the filesystem source")
    p.add_argument("--tenant", required=True, help="tenant id the documents belong to")
    p.add_argument(
        "--source",
        default=None,
        help="source name: document ids are '<source>:<path>' (default: the directory's "
        "own name as a slug, e.g. ~/Team Notes -> team-notes)",
    )
    p.add_argument(
        "--default-groups",
        default="",
        metavar="G1,G2",
        help="readers of files no _policy.yaml or sidecar gives acl_groups to (without "
        "one, such files are indexed but readable by nobody and reported as no_readers)",
    )
    p.add_argument(
        "--by-reference",
        action="store_true",
        help="send file references (the connector must list the root in its allowed roots) "
        "instead of inline bytes",
    )
    p.add_argument("--uri-prefix", default=None, help="uri = prefix + relative path")
    p.add_argument("--trust", choices=("high", "medium", "low"), default=None)


def _fs_source(args: argparse.Namespace, settle_s: float = 0.0) -> FilesystemSource:
    if args.source is None:
        args.source = derive_source_name(args.root)
    groups = tuple(g.strip() for g in args.default_groups.split(",") if g.strip())
    try:
        DocumentMeta(acl_groups=groups)
    except ValueError:
        raise ConfigError(
            f"--default-groups {args.default_groups!r}: not valid group names"
        ) from None
    return FilesystemSource(
        FsSourceConfig(
            root=args.root,
            source=args.source,
            tenant_id=args.tenant,
            by_reference=args.by_reference,
            uri_prefix=args.uri_prefix,
            settle_s=settle_s,
            trust=args.trust,
            default_acl_groups=groups,
        )
    )


def _print_no_readers(source: FilesystemSource, document_ids: list[str]) -> None:
    for line in no_readers_report(document_ids, root=source.root, tenant=source.tenant_id):
        print(line)


def register(subparsers: Any) -> None:
    sync = subparsers.add_parser(
        "sync",
        help="re-emit what Postgres lacks or holds stale, delete what the source lost",
        description="Compare a source with Postgres; the recovery path after a broker loss.",
    )
    _add_source_args(sync)
    sync.add_argument("--dry-run", action="store_true", help="report, publish nothing")
    sync.add_argument("--checksum", action="store_true", help="also hash in-sync documents")
    sync.add_argument(
        "--retry-quarantined", action="store_true", help="re-emit quarantined versions too"
    )
    sync.add_argument(
        "--allow-empty", action="store_true", help="permit deleting everything if source is empty"
    )
    sync.add_argument(
        "--allow-deletes",
        action="store_true",
        help="permit deleting documents this folder did not create (same source name, "
        "another folder) or more than RAGLINE_CONNECTOR_SYNC_MAX_DELETE_SHARE (10%%) of "
        "the source",
    )
    sync.add_argument("--list", action="store_true", help="print each document's action")
    sync.add_argument(
        "--lane",
        choices=("bulk", "interactive"),
        default="bulk",
        help="the lane the changes travel in (default bulk: interactive edits go first)",
    )
    sync.add_argument(
        "--max-backlog",
        type=int,
        default=None,
        metavar="N",
        help="publish (bulk) only while the pipeline's bulk backlog is below N records, so "
        "several tenants' backfills take turns (default RAGLINE_CONNECTOR_SYNC_MAX_BULK_"
        "BACKLOG, 500; 0 = at once)",
    )
    sync.add_argument("--no-progress", action="store_true")
    sync.set_defaults(func=_sync_main)

    watch = subparsers.add_parser(
        "watch", help="watch a directory tree and publish its changes to source.changes"
    )
    _add_source_args(watch)
    watch.add_argument("--interval", type=float, default=2.0, help="seconds between polls")
    watch.add_argument(
        "--settle", type=float, default=1.0, help="skip files modified less than this ago"
    )
    watch.add_argument(
        "--state-file",
        type=Path,
        default=None,
        help="snapshot kept across restarts (default: <state_dir>/connector/watch-*.json)",
    )
    watch.add_argument("--no-state", action="store_true", help="keep no snapshot file")
    watch.add_argument("--once", action="store_true", help="one poll, then exit")
    watch.set_defaults(func=_watch_main)


def _print_counts(title: str, counts: Counter[str]) -> None:
    print(title)
    for key in sorted(counts):
        print(f"  {key:<12} {counts[key]}")


async def _sync(args: argparse.Namespace, settings: Settings, source: FilesystemSource) -> int:
    from ragline.connector.sync import SyncPlan, sync_source

    def show(plan: SyncPlan) -> None:
        if args.list:
            unread = set(plan.no_readers)
            for action, item in plan.emit:
                mark = "  no_readers" if item.document_id in unread else ""
                print(f"{action.value:<8} {item.document_id}{mark}")
        if args.list or plan.refusal is not None:
            for doc_id in plan.deletes:
                print(f"delete   {doc_id}")
        _print_counts(f"compared {source.name} (tenant {source.tenant_id}):", plan.counts)
        _print_no_readers(source, plan.no_readers)
        if plan.refusal is not None:
            verb = "would refuse" if args.dry_run else "refused"
            print(f"{verb} to delete: {plan.refusal}", file=sys.stderr)

    connector = ConnectorSettings()
    _, done = await sync_source(
        settings,
        source,
        checksum=args.checksum,
        retry_quarantined=args.retry_quarantined,
        allow_empty=args.allow_empty,
        progress=not args.no_progress,
        dry_run=args.dry_run,
        on_plan=show,
        lane=args.lane,
        max_bulk_backlog=(
            args.max_backlog if args.max_backlog is not None else connector.sync_max_bulk_backlog
        ),
        allow_deletes=args.allow_deletes,
        max_delete_share=connector.sync_max_delete_share,
    )
    if done is None:
        print("dry run: nothing published")
    else:
        _print_counts("published to source.changes:", done)
    return 0


def _sync_main(args: argparse.Namespace) -> int:
    from ragline.connector.sync import DeletesRefused

    try:
        return asyncio.run(_sync(args, Settings(), _fs_source(args)))
    except DeletesRefused:
        print("ragline sync: nothing published", file=sys.stderr)  # show() said why
        return 1
    except RaglineError as exc:
        print(f"ragline sync: {exc}", file=sys.stderr)
        return 1


async def _watch(args: argparse.Namespace, settings: Settings) -> int:
    from ragline.connector.fs_watch import FsWatcher
    from ragline.runtime.logs import configure_logging
    from ragline.runtime.publisher import EventPublisher

    log = configure_logging("connector-watch", settings.log_level)
    source = _fs_source(args, settle_s=args.settle)
    state_file = None
    if not args.no_state:
        state_file = args.state_file or (
            settings.state_dir / "connector" / f"watch-{args.tenant}-{args.source}.json"
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with EventPublisher(settings, service="fs-watch") as pub:
        watcher = FsWatcher(
            source, pub, state_file=state_file, interval_s=args.interval, logger=log
        )
        if args.once:
            counts = await watcher.poll_once()
            _print_counts("published to source.changes:", counts)
            _print_no_readers(source, watcher.no_readers)
        else:
            log.info("watching", extra={"fields": {"source": args.source, "tenant": args.tenant}})
            await watcher.run(stop)
    return 0


def _watch_main(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_watch(args, Settings()))
    except RaglineError as exc:
        print(f"ragline watch: {exc}", file=sys.stderr)
        return 1
