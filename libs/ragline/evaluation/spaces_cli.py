"""``ragline embeddings list|create-space|backfill|promote|rollback|retire``: the
lifecycle of embedding spaces (docs/indexing.md "Embedding spaces", ADR 0012).

It lives with the evaluation layer because ``promote`` is an evaluation gate; the
other commands are thin calls into ``ragline.store.spaces`` and ``ragline.embedding``.

Exit codes: 0 done; 1 a backend failed, or the gate refused the promotion; 2 bad
arguments, or the operation is not possible in the current state (the message says
why). Progress goes to stderr; reports to stdout (``--json`` for machines).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from typing import Any

__all__ = ["register"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _actor(args: argparse.Namespace) -> str:
    if args.actor:
        return str(args.actor)
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container's UID without a passwd entry
        return "unknown"


def _space_json(s: Any) -> dict[str, Any]:
    return {
        "space_id": s.space_id,
        "name": s.name,
        "state": s.state,
        "model": s.model,
        "revision": s.revision,
        "dim": s.dim,
        "truncate_dim": s.truncate_dim,
        "normalize": s.normalize,
        "recipe": s.recipe,
        "storage": s.storage,
        "created_at": s.created_at.isoformat() if s.created_at else None,
        "promoted_at": s.promoted_at.isoformat() if s.promoted_at else None,
    }


async def _connect() -> Any:
    import psycopg
    from pgvector.psycopg import register_vector_async

    from ragline.config import Settings

    conn = await psycopg.AsyncConnection.connect(Settings().admin_dsn(), autocommit=True)
    await register_vector_async(conn)
    return conn


async def _list(args: argparse.Namespace) -> int:
    from ragline.store.spaces import count_progress, list_spaces

    async with await _connect() as conn:
        out = []
        for s in await list_spaces(conn, include_retired=args.all):
            d = _space_json(s)
            if s.state != "retired":
                d["vectors"], d["children"] = await count_progress(conn, s)
            out.append(d)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for d in out:
            cov = f"{d.get('vectors', 0):,}/{d.get('children', 0):,}" if "vectors" in d else "-"
            trunc = f" truncate {d['truncate_dim']}" if d["truncate_dim"] else ""
            print(
                f"{d['space_id']:>3} {d['name']:<20} {d['state']:<8} dim {d['dim']:<5}"
                f"{trunc} recipe {d['recipe']:<6} vectors {cov}  model {d['model'] or '(embedder)'}"
            )
    return EXIT_OK


async def _create(args: argparse.Namespace) -> int:
    from ragline.embedding.settings import EmbedderSettings
    from ragline.embedding.space_models import configured_identity
    from ragline.store.spaces import create_space, get_space

    cfg = EmbedderSettings()
    # the embedder's own model: the query service embeds queries with it, so a space of
    # another model could not be queried (ADR 0013, "not done")
    name, revision = configured_identity(cfg)
    async with await _connect() as conn:
        if args.truncate_dim is not None:
            dim = args.truncate_dim
        else:
            dim = (await get_space(conn, "primary")).dim
        space = await create_space(
            conn,
            name=args.name,
            model=name,
            revision=revision,
            dim=dim,
            truncate_dim=args.truncate_dim,
            normalize=not args.no_normalize,
            recipe=args.recipe,
            actor=_actor(args),
        )
    print(
        json.dumps(_space_json(space), indent=2)
        if args.json
        else f"created shadow space "
        f"{space.name!r} (id {space.space_id}, dim {space.dim}, recipe {space.recipe}); "
        f"next: ragline embeddings backfill --space {space.name}"
    )
    return EXIT_OK


def _fmt_eta(s: float | None) -> str:
    if s is None:
        return "?"
    m, sec = divmod(int(s), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{sec:02d}"


async def _backfill(args: argparse.Namespace) -> int:
    from ragline.config import Settings
    from ragline.embedding.backfill import BackfillStats, backfill_space
    from ragline.embedding.settings import EmbedderSettings
    from ragline.embedding.space_models import LazySpaceEmbedder
    from ragline.store.pool import open_pool
    from ragline.store.spaces import get_space

    cfg = EmbedderSettings()
    pool = await open_pool(Settings().admin_dsn(), name="embeddings-backfill", max_size=2)
    try:
        async with pool.connection() as conn:
            space = await get_space(conn, args.space)
            await conn.commit()
        embedder = LazySpaceEmbedder(space, cfg)  # loads only if a vector must be computed

        def progress(st: BackfillStats) -> None:
            pct = 100.0 * st.done / st.total if st.total else 100.0
            print(
                f"backfill {space.name}: {st.done:,}/{st.total:,} ({pct:.1f}%) "
                f"{st.rate:.1f} chunks/s, eta {_fmt_eta(st.eta_s)} "
                f"(model {st.computed:,}, cache {st.cached:,}, derived {st.derived:,})",
                file=sys.stderr,
                flush=True,
            )

        stats = await backfill_space(
            pool,
            space,
            embedder,
            batch_size=args.batch_size,
            max_rate=args.max_rate,
            on_progress=None if args.quiet else progress,
            progress_every_s=args.progress_every,
        )
    finally:
        await pool.close()
    report = {"space": space.name, **stats.as_dict()}
    print(
        json.dumps(report, indent=2)
        if args.json
        else f"space {space.name}: {stats.done:,}/{stats.total:,} child chunks have a vector; "
        f"this run wrote {stats.written:,} at {stats.rate:.1f} chunks/s"
    )
    return EXIT_OK


async def _rollback(args: argparse.Namespace) -> int:
    from ragline.store.spaces import promote, rollback_target

    async with await _connect() as conn:
        target = await rollback_target(conn)
        old, new = await promote(
            conn,
            target.name,
            actor=_actor(args),
            action="rollback",
            forced=True,  # back to a space that was live: no gate, but still audited
            reason=args.reason,
        )
    print(f"rolled back: live space {old.name!r} -> {new.name!r}")
    return EXIT_OK


async def _retire(args: argparse.Namespace) -> int:
    from ragline.store.spaces import retire

    async with await _connect() as conn:
        space = await retire(conn, args.space, actor=_actor(args), reason=args.reason)
    print(f"space {space.name!r} is {space.state}")
    return EXIT_OK


async def _promote(args: argparse.Namespace) -> int:
    from ragline.evaluation.space_gate import run_promotion

    return await run_promotion(args, actor=_actor(args))


_COMMANDS = {
    "list": _list,
    "create-space": _create,
    "backfill": _backfill,
    "promote": _promote,
    "rollback": _rollback,
    "retire": _retire,
}


def main(args: argparse.Namespace) -> int:
    import psycopg

    from ragline.errors import BackendUnavailable, ConfigError, RaglineError, TransientError
    from ragline.store.spaces import SpaceError

    try:
        return int(asyncio.run(_COMMANDS[args.embeddings_command](args)))
    except (ConfigError, SpaceError) as exc:
        print(f"ragline embeddings {args.embeddings_command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (BackendUnavailable, TransientError, RaglineError, psycopg.Error) as exc:
        print(f"ragline embeddings {args.embeddings_command}: {exc}", file=sys.stderr)
        return EXIT_FAIL


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "embeddings",
        help="embedding spaces: create, backfill, promote (gated), rollback, retire",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="embeddings_command", required=True)

    def cmd(name: str, help_: str) -> argparse.ArgumentParser:
        c: argparse.ArgumentParser = sub.add_parser(name, help=help_)
        c.add_argument("--json", action="store_true", help="machine-readable output")
        c.set_defaults(func=main)
        return c

    c = cmd("list", "every space, its state and how many child chunks have a vector in it")
    c.add_argument("--all", action="store_true", help="include retired spaces")

    c = cmd("create-space", "create a shadow space (its own partition and HNSW index)")
    c.add_argument("name", help="lower-case name, e.g. minilm-plain")
    c.add_argument(
        "--recipe",
        choices=("header", "plain"),
        default="header",
        help="embedded text: contextual header + text (as the pipeline), or text only",
    )
    c.add_argument("--truncate-dim", type=int, help="keep the first N dimensions (renormalized)")
    c.add_argument("--no-normalize", action="store_true", help="store unnormalized vectors")
    c.add_argument("--actor", help="who (audit; default the OS user)")

    c = cmd("backfill", "re-embed every chunk into a shadow space from Postgres; resumable")
    c.add_argument("--space", required=True)
    c.add_argument("--batch-size", type=int, default=64, help="chunks per batch (default 64)")
    c.add_argument("--max-rate", type=float, help="chunks per second at most (throttle)")
    c.add_argument("--progress-every", type=float, default=5.0, help="seconds between lines")
    c.add_argument("--quiet", action="store_true", help="no progress lines")

    c = cmd("promote", "gate a shadow space against the live one on the golden set, then flip")
    c.add_argument("space")
    c.add_argument(
        "--dataset",
        action="append",
        help="golden:<dir> (default golden:tests/golden) or beir:<dir>; repeatable",
    )
    c.add_argument("--split", default="test", help="BEIR qrels split (default test)")
    c.add_argument("--limit", type=int, help="BEIR: only the first N queries")
    c.add_argument("--thresholds", help="thresholds YAML (default: the dataset's own)")
    c.add_argument("--modes", default="dense,hybrid", help="modes compared (default dense,hybrid)")
    c.add_argument("--query-url", help="query service base URL (RAGLINE_EVAL_QUERY_URL)")
    c.add_argument("--out", help="directory for both reports and decision.json")
    c.add_argument(
        "--force",
        action="store_true",
        help="flip even if the gate refuses or vectors are missing (needs --reason; audited)",
    )
    c.add_argument("--reason", help="why (audit)")
    c.add_argument("--actor", help="who (audit; default the OS user)")

    c = cmd("rollback", "flip back to the space the last promotion replaced (audited)")
    c.add_argument("--reason")
    c.add_argument("--actor")

    c = cmd("retire", "stop writing a non-live space and drop its vectors")
    c.add_argument("space")
    c.add_argument("--reason")
    c.add_argument("--actor")
