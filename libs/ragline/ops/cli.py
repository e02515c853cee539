"""``ragline dlq list|replay|purge``, ``ragline topics create|list`` and ``ragline lag``.

Exit codes: 0 done, 1 a backend failed (the message says which), 2 bad arguments.
Progress bars go to stderr; reports to stdout (``--json`` for machines).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import Any

from pydantic import ValidationError

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.runtime.kafka_security import aiokafka_options

__all__ = ["register"]

_MSG_WIDTH = 90


def _quiet() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("aiokafka", "kafka", "faststream", "ragline.faststream"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _fail(exc: BaseException) -> int:
    print(f"ragline: {exc}", file=sys.stderr)
    return 1


def _selector(args: argparse.Namespace) -> Any:
    from ragline.ops.dlq_select import Selector, parse_age

    return Selector(
        error_classes=frozenset(args.error_class or ()),
        stages=frozenset(args.stage or ()),
        tenants=frozenset(args.tenant or ()),
        older_than=parse_age(args.older_than) if args.older_than else None,
    )


def _counts(c: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in c.most_common()) or "-"


def _print_report(report: Any, as_json: bool) -> None:
    if as_json:
        out = {
            "action": report.action.value,
            "group": report.group,
            "dry_run": report.dry_run,
            "topics": [t.to_json() for t in report.topics],
            "records": report.records,
        }
        print(json.dumps(out, indent=2))
        return
    for t in report.topics:
        if not t.pending:
            continue
        span = (
            f"  oldest {t.oldest:%Y-%m-%d %H:%M}  newest {t.newest:%Y-%m-%d %H:%M}"
            if (t.oldest and t.newest)
            else ""
        )
        print(f"{t.topic:<24} pending {t.pending:<6} selected {t.selected:<6}{span}")
        if t.selected:
            print(f"  error classes: {_counts(t.by_error_class)}")
            print(f"  stages:        {_counts(t.by_stage)}")
    if report.records:
        print(
            f"\n{'TOPIC[PART]@OFFSET':<28} {'FAILED AT':<20} {'STAGE':<18} {'TRIES':<5} "
            f"{'ERROR CLASS':<24} {'DOCUMENT':<30} MESSAGE"
        )
        for r in report.records:
            where = f"{r['dlq_topic']}[{r['partition']}]@{r['offset']}"
            msg = (r["error_message"] or "").replace("\n", " ")[:_MSG_WIDTH]
            print(
                f"{where:<28} {r['failed_at'][:19]:<20} {r['stage']:<18} "
                f"{r['attempts'] if r['attempts'] is not None else '-':<5} "
                f"{r['error_class']:<24} {r['document_id'] or '-':<30} {msg}"
            )
    verb = {"list": "selected", "replay": "replayed", "purge": "purged"}[report.action.value]
    n = report.total("selected" if report.action.value == "list" else "handled")
    tail = " (dry run: nothing changed)" if report.dry_run else ""
    extra = ""
    if report.action.value != "list":
        extra = f", {report.total('requeued')} kept records requeued"
        if report.total("unreplayable"):
            extra += f", {report.total('unreplayable')} not replayable (left pending)"
    print(
        f"\n{verb} {n} of {report.total('pending')} pending dead letters "
        f"(group {report.group}){extra}{tail}"
    )


def _dlq(args: argparse.Namespace) -> int:
    from ragline.ops.dlq import Action, run_dlq
    from ragline.ops.settings import OpsSettings

    _quiet()
    try:
        selector = _selector(args)
    except ValueError as exc:
        print(f"ragline dlq: {exc}", file=sys.stderr)
        return 2
    try:
        report = asyncio.run(
            run_dlq(
                Settings(),
                Action(args.dlq_command),
                topics=tuple(args.topic or ()),
                selector=selector,
                limit=args.limit,
                dry_run=getattr(args, "dry_run", False),
                group=args.group,
                progress=not args.no_progress,
                lane=getattr(args, "lane", "bulk"),
                ops=OpsSettings(),
            )
        )
    except (RaglineError, ValidationError) as exc:
        return _fail(exc)
    _print_report(report, args.json)
    return 0


def _topics(args: argparse.Namespace) -> int:
    from ragline.events import ALL_TOPICS
    from ragline.ops.settings import OpsSettings
    from ragline.runtime.topics import TopicSettings, ensure_pipeline_topics, topic_partitions
    from ragline.runtime.topology import physical_topic

    _quiet()
    try:
        settings = Settings()
        if args.topics_command == "plan":
            return _plan(args, settings)
        if args.topics_command == "list":
            names = [physical_topic(t, settings.kafka_topic_prefix) for t in ALL_TOPICS]
            counts = asyncio.run(
                topic_partitions(
                    settings.kafka_bootstrap, names, options=aiokafka_options(settings)
                )
            )
            for t in names:
                print(f"{t:<24} {counts.get(t, 'MISSING')}")
            return 0 if len(counts) == len(ALL_TOPICS) else 1
        partitions = args.partitions or settings.kafka_partitions
        rf = args.replication_factor or OpsSettings().topic_replication_factor
        report = asyncio.run(
            ensure_pipeline_topics(
                settings,
                partitions=partitions,
                replication_factor=rf,
                timeout_s=args.timeout,
                topic_settings=TopicSettings(),
            )
        )
    except (RaglineError, ValidationError) as exc:
        return _fail(exc)
    print(
        f"topics: {len(report.created)} created, {len(report.existing)} existing "
        f"({partitions} partitions, replication factor {report.replication_factor} for new ones)"
    )
    for topic, diff in sorted(report.config_drift.items()):
        shown = ", ".join(f"{k}={have} (wanted {want})" for k, (have, want) in sorted(diff.items()))
        print(f"warning: {topic} keeps its configs: {shown}", file=sys.stderr)
    odd = report.mismatched(partitions)
    if odd:
        print(f"warning: existing topics with other partition counts: {odd}", file=sys.stderr)
    return 0


def _plan(args: argparse.Namespace, settings: Settings) -> int:
    """Offline: what `topics create` would make on an empty cluster, and the ACLs."""
    from ragline.ops.settings import OpsSettings
    from ragline.runtime.topic_plan import topic_plan
    from ragline.runtime.topics import TopicSettings

    ops = OpsSettings()
    # no broker is asked: without a setting, plan for a cluster of three or more brokers
    rf = args.replication_factor or ops.topic_replication_factor or 3
    plan = topic_plan(
        TopicSettings(),
        prefix=settings.kafka_topic_prefix,
        partitions=args.partitions or settings.kafka_partitions,
        replication_factor=rf,
        max_message_bytes=settings.kafka_max_message_bytes,
        dlq_group=ops.dlq_group,
    )
    print(json.dumps(plan.to_json(), indent=2) if args.json else plan.render())
    return 0


def _lag(args: argparse.Namespace) -> int:
    from ragline.runtime.lag import wait_drained

    _quiet()
    try:
        lags = asyncio.run(wait_drained(Settings(), args.stage or None, timeout_s=args.wait or 0.0))
    except ValueError as exc:
        print(f"ragline lag: {exc}", file=sys.stderr)
        return 2
    except (RaglineError, ValidationError) as exc:
        return _fail(exc)
    total = sum(x.total for x in lags)
    if args.json:
        print(json.dumps({x.stage: {"group": x.group, **x.per_topic} for x in lags}, indent=2))
    else:
        for x in lags:
            topics = ", ".join(f"{t}={n}" for t, n in x.per_topic.items())
            print(f"{x.stage:<18} {x.total:<8} {topics}")
    # with --wait, "still behind" is a failure a script can act on
    return 1 if args.wait and total else 0


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC",
        help="a pipeline topic or its .dlq (repeatable; default: every .dlq topic)",
    )
    p.add_argument("--error-class", action="append", metavar="CLASS", help="repeatable")
    p.add_argument("--stage", action="append", metavar="STAGE", help="repeatable")
    p.add_argument("--tenant", action="append", metavar="TENANT", help="repeatable")
    p.add_argument("--older-than", metavar="AGE", help="failed before now - AGE (30m, 12h, 7d)")
    p.add_argument(
        "--group", default=None, help="consumer group of the tool (RAGLINE_OPS_DLQ_GROUP)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_dlq)


def register(sub: Any) -> None:
    dlq = sub.add_parser(
        "dlq",
        help="inspect, replay or purge dead-letter topics",
        description="Pending = after the dlq tool group's committed offset. Payloads are "
        "never printed.",
    )
    actions = dlq.add_subparsers(dest="dlq_command", required=True)
    ls = actions.add_parser("list", help="pending dead letters per topic, error class, stage")
    _filters(ls)
    ls.add_argument("--limit", type=int, default=50, help="records to show (default 50)")
    for name, text in (
        ("replay", "republish the original messages to the topics they failed on"),
        ("purge", "drop dead letters (commit past them)"),
    ):
        p = actions.add_parser(name, help=text)
        _filters(p)
        p.add_argument("--limit", type=int, default=None, help=f"{name} at most N records")
        p.add_argument("--dry-run", action="store_true", help="report, change nothing")
        if name == "replay":
            p.add_argument(
                "--lane",
                choices=("bulk", "interactive"),
                default="bulk",
                help="the lane replayed messages travel in (default bulk: never ahead of "
                "interactive changes)",
            )

    topics = sub.add_parser("topics", help="plan, create or list the pipeline's Kafka topics")
    t_actions = topics.add_subparsers(dest="topics_command", required=True)
    create = t_actions.add_parser("create", help="create missing topics (idempotent)")
    plan = t_actions.add_parser(
        "plan",
        help="what `create` would make (configs) and the ACLs each service needs; offline",
    )
    for p, rf_default in ((create, "min(3, live brokers)"), (plan, "3")):
        p.add_argument(
            "--partitions", type=int, default=None, help="default RAGLINE_KAFKA_PARTITIONS"
        )
        p.add_argument(
            "--replication-factor",
            type=int,
            default=None,
            help=f"default RAGLINE_OPS_TOPIC_REPLICATION_FACTOR, else {rf_default}",
        )
        p.set_defaults(func=_topics)
    create.add_argument("--timeout", type=float, default=30.0, help="seconds per admin call")
    plan.add_argument("--json", action="store_true", help="machine-readable plan")
    t_actions.add_parser("list", help="partition count of every topic").set_defaults(func=_topics)

    lag = sub.add_parser(
        "lag",
        help="backlog of each stage (records past its group's committed offset)",
        description="Read from the broker, so it also answers for stages that are down.",
    )
    lag.add_argument("--stage", action="append", metavar="STAGE", help="repeatable")
    lag.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="poll until every backlog is 0; exit 1 if still behind after SECONDS",
    )
    lag.add_argument("--json", action="store_true", help="machine-readable report")
    lag.set_defaults(func=_lag)
