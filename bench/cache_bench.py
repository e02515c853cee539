"""Answer cache benchmark (not a test).

``run`` (default), on a private stack with every service as its own process (cache on,
default settings), SciFact abstracts ingested through the pipeline:
- latency in the same run: each query once (a miss = full retrieval + cache lookup and
  store) and again (an exact-repeat hit), client wall time and server ``total``; plus the
  hit rate of a trivial rewording ("Is it true that ...?") at the configured threshold;
- invalidation lag from publishing a change on ``source.changes`` to the dependent cache
  entries being gone: content updates (the whole pipeline runs first) and ACL changes
  (the fast path); p50/p95, with the invalidator's own histogram for comparison.

``tune``: cosine similarity of the paraphrase / different-question pairs in
bench/cache_pairs.json with the real model, hit rates per threshold with and without the
lexical guard (how docs/cache.md's threshold was chosen).

    .venv/bin/python bench/cache_bench.py [run] [--docs 300] [--queries 40] [--probes 10]
    .venv/bin/python bench/cache_bench.py tune

Writes bench/out/cache.json (run) or bench/out/cache_tune.json (tune).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _paths import OUT, REPO, SCIFACT, add_quick, scifact
from pipeline_bench import upsert

PAIRS = REPO / "bench" / "cache_pairs.json"
TENANT = "cachebench"
SECRET = secrets.token_urlsafe(32)  # signs the bench's own tokens only


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] if xs else float("nan")


def summary(xs: list[float], scale: float = 1.0, nd: int = 1) -> dict[str, float]:
    return {
        "p50": round(pct(xs, 50) * scale, nd),
        "p95": round(pct(xs, 95) * scale, nd),
        "mean": round(statistics.fmean(xs) * scale, nd) if xs else float("nan"),
        "n": len(xs),
    }


# ------------------------------------------------------------------------------ tune


def tune() -> dict[str, Any]:
    import numpy as np

    from ragline.cache.guard import signature_hash
    from ragline.cache.settings import CacheSettings
    from ragline.embedding.model import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder(batch_size=64)
    data = json.loads(PAIRS.read_text())

    def score(pairs: list[list[str]]) -> tuple[Any, Any]:
        a = model.encode([p[0] for p in pairs])
        b = model.encode([p[1] for p in pairs])
        sims = (a * b).sum(axis=1)
        same = np.array([signature_hash([x]) == signature_hash([y]) for x, y in pairs])
        return sims, same

    report: dict[str, Any] = {
        "model": model.name,
        "threshold": CacheSettings().similarity_threshold,
    }
    for split in ("", "heldout_"):
        ps, pg = score(data[f"{split}paraphrase"])
        ns, ng = score(data[f"{split}different"])
        rows = []
        for t in [round(x, 2) for x in np.arange(0.80, 0.975, 0.01)]:
            rows.append(
                {
                    "threshold": t,
                    "paraphrase_hit": round(float(((ps >= t) & pg).mean()), 3),
                    "different_hit": round(float(((ns >= t) & ng).mean()), 3),
                    "paraphrase_hit_no_guard": round(float((ps >= t).mean()), 3),
                    "different_hit_no_guard": round(float((ns >= t).mean()), 3),
                }
            )
        name = split.rstrip("_") or "design"
        report[name] = {
            "pairs": {"paraphrase": len(ps), "different": len(ns)},
            "guard_blocks": {"paraphrase": int((~pg).sum()), "different": int((~ng).sum())},
            "max_unguarded_different_cosine": round(float(ns[ng].max()), 3),
            "by_threshold": rows,
        }
        print(f"\n{name}: {len(ps)} paraphrase / {len(ns)} different pairs")
        print("threshold  para-hit  diff-hit  para-hit(no guard)  diff-hit(no guard)")
        for r in rows:
            cols = ("paraphrase_hit", "different_hit", "paraphrase_hit_no_guard")
            print(
                f"  {r['threshold']:.2f}  "
                + "  ".join(f"{r[c]:.3f}" for c in cols)
                + f"  {r['different_hit_no_guard']:.3f}"
            )
    return report


# ------------------------------------------------------------------------------- run


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open() as fh:
        return [json.loads(line) for line in fh]


def pick(n_docs: int, n_queries: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Queries with a relevant abstract, and a corpus holding those abstracts + filler."""
    qrels: dict[str, set[str]] = {}
    for f in sorted((SCIFACT / "qrels").glob("*.tsv")):
        for line in f.read_text().splitlines()[1:]:
            q, d, *_ = line.split("\t")
            qrels.setdefault(q, set()).add(d)
    corpus = {d["_id"]: d for d in load_jsonl(SCIFACT / "corpus.jsonl")}
    queries = [q for q in load_jsonl(SCIFACT / "queries.jsonl") if q["_id"] in qrels]
    queries = queries[:n_queries]
    wanted = list(dict.fromkeys(d for q in queries for d in sorted(qrels[q["_id"]])))
    filler = [d for d in corpus if d not in set(wanted)]
    ids = (wanted + filler)[: max(n_docs, len(wanted))]
    return [corpus[i] for i in ids], queries


class Api:
    def __init__(self, url: str) -> None:
        import httpx
        import jwt

        claims = {"sub": "bench", "tenant": TENANT, "groups": ["all"], "exp": time.time() + 7200}
        token = jwt.encode(claims, SECRET, algorithm="HS256")
        self.client = httpx.AsyncClient(
            base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"}
        )

    async def search(self, query: str) -> tuple[dict[str, Any], float]:
        t0 = time.perf_counter()
        resp = await self.client.post("/v1/search", json={"query": query, "top_k": 10})
        wall = time.perf_counter() - t0
        resp.raise_for_status()
        return dict(resp.json()), wall


async def scalar(conn: Any, query: str, *params: Any) -> Any:
    cur = await conn.execute(query, params)
    row = await cur.fetchone()
    await conn.commit()
    return row[0] if row else None


async def run(args: argparse.Namespace, query_url: str, invalidator: Any) -> dict[str, Any]:
    import psycopg
    from tqdm import tqdm

    from ragline.config import Settings
    from ragline.events import SourceAclChange, Topics
    from ragline.runtime.publisher import EventPublisher

    settings = Settings()
    docs, queries = pick(args.docs, args.queries)
    report: dict[str, Any] = {"docs": len(docs), "queries": len(queries)}
    api = Api(query_url)
    async with (
        EventPublisher(settings, service="bench") as pub,
        await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn,
    ):
        t0 = time.perf_counter()
        for d in tqdm(docs, desc="publish", unit="doc"):
            await pub.publish(Topics.SOURCE_CHANGES, upsert(TENANT, d, 1))
        bar = tqdm(total=len(docs), desc="indexed", unit="doc")
        done = 0
        while done < len(docs):
            await asyncio.sleep(0.5)
            now = await scalar(
                conn,
                "SELECT count(*) FROM document_status WHERE tenant_id = %s"
                " AND status IN ('indexed', 'quarantined')",
                TENANT,
            )
            bar.update(now - done)
            done = now
            if time.perf_counter() - t0 > args.timeout:
                raise TimeoutError(f"only {done} documents indexed")
        bar.close()
        report["ingest_s"] = round(time.perf_counter() - t0, 1)
        # the invalidator drains its doc.indexed backlog (its fence refuses stores of
        # searches that began before an invalidation it is still applying)
        while invalidations(invalidator) < len(docs):
            if time.perf_counter() - t0 > args.timeout:
                raise TimeoutError("the invalidator did not catch up")
            await asyncio.sleep(0.2)
        report["invalidator_caught_up_s"] = round(time.perf_counter() - t0, 1)

        # ---- latency: miss (full retrieval) then hit, same queries, same run
        miss_wall, miss_srv, hit_wall, hit_srv, lookup_ms = [], [], [], [], []
        cited: dict[str, str] = {}  # query -> a document its cached answer cites
        reworded_hits = 0
        states: dict[str, int] = {}
        for q in tqdm(queries, desc="queries", unit="q"):
            first, w1 = await api.search(q["text"])
            second, w2 = await api.search(q["text"])
            states[f"{first['cache']}/{second['cache']}"] = (
                states.get(f"{first['cache']}/{second['cache']}", 0) + 1
            )
            if first["cache"] == "miss":
                miss_wall.append(w1)
                miss_srv.append(first["timings_ms"]["total"] / 1000)
            if second["cache"] == "hit":
                hit_wall.append(w2)
                hit_srv.append(second["timings_ms"]["total"] / 1000)
                lookup_ms.append(second["timings_ms"].get("cache", 0.0))
                if first["results"]:
                    cited[q["text"]] = first["results"][0]["document_id"]
            claim = q["text"].rstrip(".")
            reworded, _ = await api.search(f"Is it true that {claim[:1].lower()}{claim[1:]}?")
            reworded_hits += reworded["cache"] == "hit"
        report["latency_ms"] = {
            "miss_full_retrieval_wall": summary(miss_wall, 1000),
            "hit_wall": summary(hit_wall, 1000),
            "miss_full_retrieval_server": summary(miss_srv, 1000),
            "hit_server": summary(hit_srv, 1000),
            "hit_cache_stage_server": summary([x / 1000 for x in lookup_ms], 1000),
        }
        report["first/repeat_cache_states"] = states
        report["speedup_p50_wall"] = round(pct(miss_wall, 50) / pct(hit_wall, 50), 1)
        report["reworded_is_it_true_hit_rate"] = round(reworded_hits / len(queries), 3)

        # ---- invalidation lag: source.changes -> dependent entries gone
        async def probe(q: str, doc_id: str, make_event: Any) -> float:
            for _ in range(5):  # refill (a miss after the previous probe's eviction)
                await api.search(q)
                again, _ = await api.search(q)
                if again["cache"] == "hit":
                    break
                await asyncio.sleep(0.5)
            else:
                raise RuntimeError("could not refill the probe's entry")
            n = await scalar(
                conn,
                "SELECT count(*) FROM answer_cache WHERE tenant_id = %s AND document_ids && %s",
                TENANT,
                [doc_id],
            )
            assert n and n > 0, "the probe's entry does not cite its document"
            t = time.perf_counter()
            await pub.publish(Topics.SOURCE_CHANGES, make_event())
            while await scalar(
                conn,
                "SELECT count(*) FROM answer_cache WHERE tenant_id = %s AND document_ids && %s",
                TENANT,
                [doc_id],
            ):
                if time.perf_counter() - t > 600:
                    raise TimeoutError(f"entry citing {doc_id} never evicted")
                await asyncio.sleep(0.01)
            return time.perf_counter() - t

        lag_before = lag_histogram(invalidator)
        by_id = {f"scifact:{d['_id']}": d for d in docs}
        items = list(cited.items())[: args.probes]
        content, acl = [], []
        for i, (q, doc_id) in enumerate(tqdm(items, desc="content probes", unit="probe")):
            content.append(
                await probe(
                    q,
                    doc_id,
                    lambda i=i, d=doc_id: upsert(
                        TENANT, by_id[d], time.time_ns(), note=f" Revision note {i}."
                    ),
                )
            )
        for i, (q, doc_id) in enumerate(tqdm(items, desc="acl probes", unit="probe")):
            acl.append(
                await probe(
                    q,
                    doc_id,
                    lambda i=i, d=doc_id: SourceAclChange(
                        tenant_id=TENANT,
                        document_id=d,
                        source_seq=time.time_ns(),
                        acl_groups=("all", f"extra{i}"),
                    ),
                )
            )
        report["invalidation_lag_s"] = {
            "content_update_source_to_evicted": summary(content, 1, 3),
            "acl_change_source_to_evicted": summary(acl, 1, 3),
        }
        lag_count, lag_sum = lag_histogram(invalidator)
        n = lag_count - lag_before[0]
        if n > 0:
            report["invalidator_histogram_mean_during_probes_s"] = round(
                (lag_sum - lag_before[1]) / n, 3
            )
        stats = await conn.execute(
            "SELECT count(*), coalesce(sum(size_bytes), 0) FROM answer_cache WHERE tenant_id = %s",
            (TENANT,),
        )
        row = await stats.fetchone()
        report["cache_rows_at_end"] = {"entries": row[0], "bytes": row[1]} if row else {}
    await api.client.aclose()
    return report


def lag_histogram(proc: Any) -> tuple[float, float]:
    """(count, sum) of the invalidator's ragline_cache_invalidation_lag_seconds."""
    text = proc.metrics()
    out = []
    for part in ("count", "sum"):
        m = re.search(rf"^ragline_cache_invalidation_lag_seconds_{part} ([0-9.e+]+)$", text, re.M)
        out.append(float(m.group(1)) if m else 0.0)
    return out[0], out[1]


def invalidations(proc: Any) -> float:
    """doc.indexed events the invalidator has handled (applied or skipped)."""
    total = 0.0
    for m in re.finditer(
        r"^ragline_cache_invalidations_total\{[^}]*\} ([0-9.e+]+)$", proc.metrics(), re.M
    ):
        total += float(m.group(1))
    return total


def run_main(args: argparse.Namespace) -> dict[str, Any]:
    from ragline.catalog import SERVICES
    from ragline.config import Settings
    from ragline.platform.stack import StackManager, StackSettings
    from ragline.platform.stack.testing import (
        ServiceProcess,
        free_port,
        patched_environ,
        stack_env,
        stop_all,
    )

    base = Path(tempfile.mkdtemp(prefix="ragline-cache-bench-"))
    with patched_environ(stack_env(base / "state")):
        os.environ["RAGLINE_QUERY_JWT_SECRET"] = SECRET
        os.environ["RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE"] = "0"
        settings = Settings()
        manager = StackManager(settings, StackSettings(), detached=False)
        asyncio.run(manager.up())
        procs = {
            name: ServiceProcess(
                name,
                env=dict(os.environ),
                log_path=base / f"{name}.log",
                metrics_port=free_port(),
                http_port=free_port(),
                cwd=REPO,
            )
            for name in SERVICES
        }
        try:
            for name, p in procs.items():
                if name == "query":  # serves /metrics on its HTTP port
                    p.wait_ready()
                else:
                    p.wait_metrics(timeout_s=300)
            report = {
                "machine": {
                    "cpus": os.cpu_count(),
                    "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
                },
                **asyncio.run(run(args, procs["query"].http_url, procs["cache_invalidator"])),
            }
        finally:
            stop_all(procs.values())
            asyncio.run(manager.down())
            shutil.rmtree(base, ignore_errors=True)
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", nargs="?", choices=("run", "tune"), default="run")
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--probes", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=1800)
    add_quick(ap)
    args = ap.parse_args()
    scifact(quick=args.quick)  # or say where to get it (--quick: a skip)
    if args.quick:
        args.docs, args.queries, args.probes = 30, 8, 3
    OUT.mkdir(parents=True, exist_ok=True)
    if args.command == "tune":
        report = tune()
        (OUT / "cache_tune.json").write_text(json.dumps(report, indent=2))
        return 0
    report = run_main(args)
    (OUT / "cache.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
