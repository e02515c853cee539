"""``ragline up | down | services | token``: the whole local platform in one command.

``up`` starts the stack, every service as its own process, ingests the sample corpus
(examples/corpus) through the real pipeline and runs a sample query.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragline.auth import AuthError, Principal, mint_token
from ragline.auth.tokens import ADMIN_ROLE, ROLES_CLAIM
from ragline.catalog import SERVICES
from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.platform import supervisor
from ragline.runtime.lag import wait_drained
from ragline.runtime.service_main import http_port

__all__ = ["local_secrets", "register"]

DEMO_TENANT = "demo"
DEMO_GROUPS = ("all", "eng")
DEMO_QUERY = "What does error GW-5031 mean and how do I fix it?"


def local_secrets(settings: Settings) -> dict[str, str]:
    """Per-checkout secrets for local use, generated once under state_dir (gitignored).

    Values already in the environment win, so production-like setups inject their own.
    """
    path = settings.state_dir / "local.env"
    stored: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            if key and value:
                stored[key] = value
    wanted = (
        "RAGLINE_QUERY_JWT_SECRET",
        "RAGLINE_CONNECTOR_WEBHOOK_SECRET",
        "RAGLINE_QUERY_AUDIT_HASH_KEY",
    )
    changed = False
    for key in wanted:
        if key not in stored:
            stored[key] = secrets.token_urlsafe(32)
            changed = True
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in stored.items()))
        path.chmod(0o600)
    return {k: os.environ.get(k, v) for k, v in stored.items()}


def _print_services(settings: Settings) -> None:
    for st in supervisor.status(settings):
        health = "healthy" if st.healthy else ("running" if st.alive else "stopped")
        extra = "".join(f"  {e}" for e in st.endpoints)
        print(f"{st.name:<18} {health:<12} pid {st.pid or '-':<8} {st.address}{extra}")


def _stack_env(settings: Settings) -> dict[str, str]:
    """Every node of the local clusters the state dir holds (``StackManager.client_env``);
    nothing where no local stack can be described (a service image, bad settings)."""
    try:
        from ragline.platform.stack import StackManager, StackSettings

        return StackManager(settings, StackSettings()).client_env()
    except (ModuleNotFoundError, RaglineError, ValueError):
        return {}


def _start_services(settings: Settings, env: Mapping[str, str]) -> tuple[str, ...]:
    supervisor.start(settings, SERVICES, env=env)
    return SERVICES


async def _wait_indexed(settings: Settings, tenant: str, expected: int, timeout_s: float) -> int:
    import psycopg

    deadline = time.monotonic() + timeout_s
    done = 0
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn:
        while time.monotonic() < deadline:
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE status IN ('indexed','quarantined'))"
                " FROM document_status WHERE tenant_id = %s",
                (tenant,),
            )
            row = await cur.fetchone()
            await conn.commit()
            done = int(row[0]) if row else 0
            print(f"\r  indexed {done}/{expected}", end="", flush=True)
            if done >= expected:
                break
            await asyncio.sleep(1)
    print()
    # a document row says indexed a moment before its OpenSearch copy exists: wait for the
    # indexer to commit (it does so after both writes) so the sample query sees BM25 too
    if done >= expected:
        await wait_drained(settings, ["indexer"], timeout_s=max(deadline - time.monotonic(), 0))
    return done


async def _sample_query(settings: Settings, secret: str) -> None:
    import httpx

    token = mint_token(Principal(tenant=DEMO_TENANT, groups=DEMO_GROUPS, subject="demo"), secret)
    url = f"http://127.0.0.1:{http_port('query', settings)}/v1/search"
    async with httpx.AsyncClient(timeout=60) as client:
        resp = await client.post(
            url,
            headers={"Authorization": f"Bearer {token}"},
            json={"query": DEMO_QUERY, "top_k": 3, "mode": "hybrid"},
        )
    print(f"\nPOST {url}  ({resp.status_code})  query: {DEMO_QUERY!r}")
    body = resp.json()
    for i, hit in enumerate(body.get("results", []), 1):
        cite = hit.get("citation", {})
        path = " > ".join(cite.get("section_path") or [])
        print(f"  {i}. {cite.get('title')} — {path}  [{hit['document_id']}]")
    if body.get("abstained"):
        print(f"  abstained: {body.get('abstain_reason')}")


def _up(args: argparse.Namespace) -> int:
    from ragline.connector.fs_source import FilesystemSource, FsSourceConfig, derive_source_name
    from ragline.connector.sync import sync_source
    from ragline.indexing.settings import IndexerSettings
    from ragline.platform.stack import StackManager, StackSettings
    from ragline.platform.stack.hooks import local_hooks

    settings = Settings()
    env = local_secrets(settings)  # the services get them; this process needs none
    try:
        manager = StackManager(settings, StackSettings(), hooks=local_hooks(IndexerSettings()))
        report = asyncio.run(manager.up())
        print(f"stack up in {report.seconds:.1f} s (state in {settings.state_dir})")
        for hook, summary in report.hooks:
            print(f"  {hook}: {summary}")
        names = _start_services(settings, {**env, **manager.client_env()})
        _print_services(settings)
        if args.no_ingest:
            return 0
        corpus = Path(args.corpus)
        files = [p for p in corpus.rglob("*") if p.is_file() and not p.name.endswith(".yaml")]
        print(f"\ningesting {len(files)} documents from {corpus} as tenant {DEMO_TENANT!r}")
        # the name `ragline sync <corpus> --tenant demo` derives too: one source, not two
        name = derive_source_name(corpus)
        source = FilesystemSource(FsSourceConfig(root=corpus, source=name, tenant_id=DEMO_TENANT))
        _, published = asyncio.run(sync_source(settings, source, progress=False))
        print(f"published to source.changes: {dict(sorted((published or {}).items()))}")
        done = asyncio.run(_wait_indexed(settings, DEMO_TENANT, len(files), args.timeout))
        if done < len(files):
            print(
                f"only {done}/{len(files)} documents indexed after {args.timeout:.0f} s;"
                f" see {settings.state_dir / 'logs'}",
                file=sys.stderr,
            )
            return 1
        if "query" in names:
            asyncio.run(_sample_query(settings, env["RAGLINE_QUERY_JWT_SECRET"]))
            port = http_port("query", settings)
            print(
                "\nQuery it yourself:\n"
                f"  TOKEN=$(.venv/bin/ragline token --tenant {DEMO_TENANT} --groups all,eng)\n"
                f'  curl -s localhost:{port}/v1/search -H "Authorization: Bearer $TOKEN" '
                "-H 'content-type: application/json' "
                '-d \'{"query": "remote work equipment allowance", "top_k": 3}\'\n'
                f"  API docs: http://localhost:{port}/docs   stop: make down\n"
                "Your own folder (source = the folder's name; readable by group eng):\n"
                f"  .venv/bin/ragline sync ~/notes --tenant {DEMO_TENANT} --default-groups eng"
            )
    except RaglineError as exc:
        print(f"ragline up: {exc}", file=sys.stderr)
        return 1
    return 0


def _down(args: argparse.Namespace) -> int:
    from ragline.platform.stack import StackManager, StackSettings

    settings = Settings()
    supervisor.stop(settings)
    asyncio.run(StackManager(settings, StackSettings()).down())
    print("services and stack stopped")
    return 0


def _services(args: argparse.Namespace) -> int:
    settings = Settings()
    names = tuple(args.names) or SERVICES
    try:
        if args.action == "start":
            env = {**local_secrets(settings), **_stack_env(settings)}
            supervisor.start(settings, names, env=env)
        elif args.action == "stop":
            supervisor.stop(settings, names)
    except RaglineError as exc:
        print(f"ragline services: {exc}", file=sys.stderr)
        return 1
    _print_services(settings)
    states = supervisor.status(settings)
    return 0 if all(s.healthy for s in states if s.name in names) else 1


def _token(args: argparse.Namespace) -> int:
    secret = local_secrets(Settings())["RAGLINE_QUERY_JWT_SECRET"]
    groups = tuple(g for g in args.groups.split(",") if g)
    try:
        principal = Principal(tenant=args.tenant, groups=groups, subject=args.subject)
    except AuthError as exc:  # the query service would refuse the token anyway
        print(f"ragline token: {exc}", file=sys.stderr)
        return 2
    extra = {ROLES_CLAIM: [ADMIN_ROLE], "admin_tenants": args.admin} if args.admin else None
    print(mint_token(principal, secret, ttl_s=args.ttl, extra_claims=extra))
    return 0


def register(sub: Any) -> None:
    up = sub.add_parser("up", help="stack + all services + ingest the sample corpus + query")
    up.add_argument("--corpus", default="examples/corpus")
    up.add_argument("--no-ingest", action="store_true")
    up.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for indexing")
    up.set_defaults(func=_up)
    down = sub.add_parser("down", help="stop every service and the stack")
    down.set_defaults(func=_down)
    svc = sub.add_parser("services", help="start|stop|status of the local service processes")
    svc.add_argument("action", choices=("start", "stop", "status"))
    svc.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(SERVICES)}")
    svc.set_defaults(func=_services)
    tok = sub.add_parser("token", help="mint a local HS256 token for the query API")
    tok.add_argument("--tenant", required=True)
    tok.add_argument("--groups", default="")
    tok.add_argument("--subject", default="local-user")
    tok.add_argument("--ttl", type=int, default=3600)
    tok.add_argument(
        "--admin",
        action="append",
        metavar="TENANT",
        help="an operator console token administering TENANT (repeatable; '*': every tenant)",
    )
    tok.set_defaults(func=_token)
