"""Create -> backfill -> eval -> promote -> rollback -> retire through the CLI against a
real query service process, on a SciFact subset seeded with real vectors. The gate
refuses the space that measurably regresses (a 16-dimension truncation) and promotes
one that does not; ordinary callers never pick a space (see test_spaces_query).

Not part of ``make test`` (about 3-8 minutes on the shared 2-core machine: a query
service process, ten evaluation runs): ``make spaces-gate``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from spaces_helpers import SCIFACT, pack, scifact_subset, seed_docs

from ragline.store.spaces import get_space, live_space

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

REPO = Path(__file__).resolve().parents[3]
SECRET = "spaces-gate-secret-0123456789abcdef01234"
ADMIN = "spaces-gate-admin-key"


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.mark.skipif(
    not os.environ.get("RAGLINE_SPACES_GATE"), reason="long (minutes): `make spaces-gate`"
)
@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(), reason="SciFact not available")
async def test_gate_refuses_a_regressing_space_and_promotes_one_that_holds(
    install, pool, model, service_process, tmp_path
):
    data = tmp_path / "scisub"
    corpus = scifact_subset(SCIFACT, data, queries=30, distractors=40)
    docs = [(f"scisub:{r['_id']}", r.get("title") or "", pack(r.get("text") or "")) for r in corpus]
    await seed_docs(pool, model, "eval", docs, groups=("eval",))

    env = {
        **os.environ,
        "RAGLINE_PG_DATABASE": install.pg_database,
        "RAGLINE_QUERY_JWT_SECRET": SECRET,
        "RAGLINE_QUERY_SPACE_ADMIN_KEY": ADMIN,
        "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
        "RAGLINE_QUERY_MAX_TOP_K": "100",
        "RAGLINE_CACHE_ENABLED": "false",
    }
    query = service_process("query", env=env)
    env["RAGLINE_EVAL_QUERY_URL"] = query.http_url

    for args in (
        ("create-space", "t16", "--truncate-dim", "16"),
        ("create-space", "copy"),
        ("backfill", "--space", "t16", "--quiet"),
        ("backfill", "--space", "copy", "--quiet"),
    ):
        r = run(env, "embeddings", *args)
        assert r.returncode == 0, (args, r.stdout, r.stderr, query.log()[-2000:])

    def eval_space(env: dict[str, str], out: str) -> subprocess.CompletedProcess[str]:
        return run(
            env,
            "eval",
            "--dataset",
            f"beir:{data}",
            "--no-ingest",
            "--modes",
            "dense",
            "--space",
            "t16",
            "--out",
            str(tmp_path / out),
            "--no-progress",
        )

    # ragline eval on a non-live space (admin key from the environment) ...
    r = eval_space(env, "eval-t16")
    assert r.returncode == 0, (r.stdout, r.stderr)
    # ... and without the admin key it cannot
    no_key = {k: v for k, v in env.items() if k != "RAGLINE_QUERY_SPACE_ADMIN_KEY"}
    assert eval_space(no_key, "eval-nokey").returncode != 0

    gate = ("--dataset", f"beir:{data}", "--modes", "dense")
    r = run(env, "embeddings", "promote", "t16", *gate, "--out", str(tmp_path / "g1"))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "REFUSED" in r.stdout and "ndcg@10" in r.stdout
    decision = json.loads((tmp_path / "g1" / "decision.json").read_text())
    ev = decision["datasets"][0]
    assert decision["refused"] and ev["violations"]
    assert ev["shadow"]["dense"]["ndcg@10"] < ev["live"]["dense"]["ndcg@10"] - 0.02
    async with pool.connection() as conn:
        assert (await live_space(conn)).name == "primary"
        cur = await conn.execute(
            "SELECT action, forced FROM embedding_space_events e JOIN embedding_spaces s"
            " USING (space_id) WHERE s.name = 't16' ORDER BY event_id"
        )
        assert [a for a, _ in await cur.fetchall()] == ["create", "refuse"]
        await conn.commit()

    r = run(env, "embeddings", "promote", "copy", *gate)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert re.search(r"PROMOTED: live space 'primary' -> 'copy'", r.stdout)

    # --force is explicit and needs a reason; it is audited with what it overrode
    assert run(env, "embeddings", "promote", "t16", *gate, "--force").returncode == 2
    r = run(env, "embeddings", "promote", "t16", *gate, "--force", "--reason", "test override")
    assert r.returncode == 0 and "FORCED" in r.stdout, (r.stdout, r.stderr)
    r = run(env, "embeddings", "rollback", "--reason", "back")
    assert r.returncode == 0 and "'t16' -> 'copy'" in r.stdout, (r.stdout, r.stderr)

    assert run(env, "embeddings", "retire", "copy").returncode == 2  # live: refused
    r = run(env, "embeddings", "retire", "t16")
    assert r.returncode == 0, r.stderr
    async with pool.connection() as conn:
        t16 = await get_space(conn, "t16")
        assert t16.state == "retired" and (await live_space(conn)).name == "copy"
        cur = await conn.execute("SELECT to_regclass(%s)", (f"space_vectors_s{t16.space_id}",))
        assert await cur.fetchone() == (None,)
        cur = await conn.execute(
            "SELECT action, forced, reason FROM embedding_space_events ORDER BY event_id"
        )
        log = await cur.fetchall()
        await conn.commit()
    assert ("promote", True, "test override") in log
    assert [a for a, _, _ in log][-3:] == ["promote", "rollback", "retire"]
    listing = json.loads(run(env, "embeddings", "list", "--json", "--all").stdout)
    assert {s["name"]: s["state"] for s in listing} == {
        "primary": "shadow",
        "t16": "retired",
        "copy": "live",
    }
