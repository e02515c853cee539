"""``ragline documents list | show | explain``: what the stores hold about documents, and
why one is not in a principal's results (the console's why-not page, on the command
line: both call ``ragline.ops.explain``). Runs with the admin DSN: every tenant."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from datetime import date
from typing import Any

__all__ = ["register_read"]

_STATES = ("all", "indexed", "deleted", "quarantined", "in_flight", "failed", "no_readers")


def _fail(cmd: str, exc: BaseException, code: int) -> int:
    print(f"ragline documents {cmd}: {exc}", file=sys.stderr)
    return code


def _list(args: argparse.Namespace) -> int:
    import psycopg

    from ragline.config import Settings
    from ragline.errors import RaglineError
    from ragline.ops.doc_facts import list_documents
    from ragline.store.pg_errors import pg_errors

    async def run() -> Any:
        with pg_errors():
            async with await psycopg.AsyncConnection.connect(Settings().admin_dsn()) as conn:
                return await list_documents(
                    conn, args.tenant, state=args.state, prefix=args.prefix, limit=args.limit
                )

    try:
        docs = asyncio.run(run())
    except RaglineError as exc:
        return _fail("list", exc, 1)
    if args.json:
        print(json.dumps([d.to_json() for d in docs], indent=2))
        return 0
    if not docs:
        print(f"no documents in tenant {args.tenant} with state {args.state}")
        return 0
    print(f"{'DOCUMENT':<40} {'STATE':<12} {'GEN':>4} {'SEQ':>6}  {'ACL':<24} REASON")
    for d in docs:
        acl = ",".join(d.acl_groups) or "-"
        reason = d.reason_code or ""
        gen = "-" if d.generation is None else str(d.generation)
        seq = "-" if d.source_seq is None else str(d.source_seq)
        print(f"{d.document_id:<40} {d.state:<12} {gen:>4} {seq:>6}  {acl:<24} {reason}")
    readerless = sum(d.state == "no_readers" for d in docs)
    if readerless:
        print(
            f"\n{readerless} document(s) have no readers (empty ACL): give their source an "
            "ACL policy and sync again",
            file=sys.stderr,
        )
    return 0


def _show(args: argparse.Namespace) -> int:
    import psycopg

    from ragline.config import Settings
    from ragline.errors import RaglineError
    from ragline.ops.doc_facts import read_facts, timeline
    from ragline.store.pg_errors import pg_errors

    async def run() -> Any:
        with pg_errors():
            async with await psycopg.AsyncConnection.connect(Settings().admin_dsn()) as conn:
                facts = await read_facts(conn, args.tenant, args.document)
                events = await timeline(conn, args.tenant, args.document) if facts else []
                return facts, events

    try:
        facts, events = asyncio.run(run())
    except RaglineError as exc:
        return _fail("show", exc, 1)
    if facts is None:
        print(f"no document {args.document!r} in tenant {args.tenant}", file=sys.stderr)
        return 1
    if args.json:
        out = {"document": facts.to_json(), "timeline": [e.to_json() for e in events]}
        print(json.dumps(out, indent=2))
        return 0
    for k, v in facts.to_json().items():
        if v not in (None, [], {}):
            print(f"{k:<22} {v}")
    print("\ntimeline:")
    for e in events:
        seq = f" seq {e.seq}" if e.seq is not None else ""
        detail = f"  {json.dumps(e.detail)}" if e.detail else ""
        print(f"  {e.at:%Y-%m-%d %H:%M:%S}  {e.source:<22} {e.what}{seq}{detail}")
    return 0


def _explain(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ragline.auth.principal import AuthError, Principal
    from ragline.config import Settings
    from ragline.errors import ConfigError, RaglineError
    from ragline.ops.explain import OperatorRights
    from ragline.ops.explain_backends import open_ops_backends
    from ragline.retrieval.api_models import SearchRequest
    from ragline.retrieval.settings import QuerySettings

    try:
        principal = Principal(
            tenant=args.tenant,
            groups=tuple(g for g in args.groups.split(",") if g),
            subject=args.subject,
        )
        request = SearchRequest(
            query=args.query,
            top_k=args.top_k,
            mode=args.mode,
            as_of=args.as_of,
            include_history=args.include_history,
            max_per_document=args.max_per_document,
            expand_parents=args.expand_parents,
        )
    except (AuthError, ValidationError, ValueError) as exc:
        return _fail("explain", exc, 2)

    async def run() -> Any:
        async with open_ops_backends(Settings(), QuerySettings()) as ops:
            return await ops.explainer.explain(
                OperatorRights(subject=getpass.getuser()),
                principal,
                request,
                document_id=args.document,
                chunk_id=args.chunk,
            )

    try:
        ex = asyncio.run(run())
    except ConfigError as exc:
        return _fail("explain", exc, 2)
    except RaglineError as exc:
        return _fail("explain", exc, 1)
    if args.json:
        print(json.dumps(ex.to_json(), indent=2, default=str))
        return 0
    print(f"{ex.cause.value}: {ex.summary}")
    if ex.fix:
        print(f"what to do: {ex.fix}")
    for c in ex.checks:
        print(f"  [{'ok' if c.ok else 'NO'}] {c.name:<16} {c.detail}")
    return 0


def register_read(actions: Any) -> None:
    ls = actions.add_parser(
        "list",
        help="a tenant's documents with state, generation, ACL and quarantine reason",
        description="States: indexed, deleted, quarantined, in_flight (accepted, not yet "
        "indexed), failed, no_readers (indexed with an empty ACL: nobody can read them).",
    )
    ls.add_argument("--tenant", required=True)
    ls.add_argument("--state", choices=_STATES, default="all")
    ls.add_argument("--prefix", default=None, help="document id prefix, e.g. a source 'fs:'")
    ls.add_argument("--limit", type=int, default=100)
    ls.add_argument("--json", action="store_true", help="machine-readable report")
    ls.set_defaults(func=_list)

    show = actions.add_parser(
        "show", help="one document: state, hashes, generations, ACL, reasons and timeline"
    )
    show.add_argument("--tenant", required=True)
    show.add_argument("--document", required=True, help="the document id, <source>:<id>")
    show.add_argument("--json", action="store_true", help="machine-readable report")
    show.set_defaults(func=_show)

    ex = actions.add_parser(
        "explain",
        help="why a document (or chunk) is or is not in a principal's results",
        description="Runs the query as the principal (tenant + groups) through the query "
        "service's own search and names the exact cause: not ingested, quarantined, "
        "deleted, in flight, outside the ACL or tenant, superseded, not in force, filtered, "
        "below k in each leg (with its ranks), removed by the per-document cap or parent "
        "diversity, an abstention, or its rank. Never prints document text.",
    )
    ex.add_argument("--tenant", required=True, help="the principal's tenant")
    ex.add_argument("--groups", required=True, help="the principal's groups, comma-separated")
    ex.add_argument("--subject", default="explain", help="the principal's subject")
    target = ex.add_mutually_exclusive_group(required=True)
    target.add_argument("--document", help="the document id")
    target.add_argument("--chunk", help="a chunk id")
    ex.add_argument("--query", required=True)
    ex.add_argument("--mode", choices=("hybrid", "dense", "lexical"), default="hybrid")
    ex.add_argument("--top-k", type=int, default=10)
    ex.add_argument("--as-of", type=date.fromisoformat, default=None, help="YYYY-MM-DD")
    ex.add_argument("--include-history", action="store_true")
    ex.add_argument("--max-per-document", type=int, default=None)
    ex.add_argument("--expand-parents", action="store_true")
    ex.add_argument("--json", action="store_true", help="machine-readable report")
    ex.set_defaults(func=_explain)
