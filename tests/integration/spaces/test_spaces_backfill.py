"""Create a shadow space and backfill it from the chunk texts in Postgres, as the
``ragline embeddings`` CLI does (the real model; the killed run is a real process); a
SIGKILL mid-run resumes without re-embedding a finished chunk."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from spaces_helpers import seed

from ragline.cli import main as cli_main
from ragline.config import Settings
from ragline.platform.stack.testing import patched_environ, unique_tenant
from ragline.store.spaces import count_progress, get_space, list_spaces

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

REPO = Path(__file__).resolve().parents[3]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


async def cli(install: Settings, *args: str) -> Ran:
    """``ragline embeddings ...`` in this process (its own event loop, in a thread) against
    the test's database; the SIGKILLed run below is a real process."""

    def go() -> Ran:
        out, err = io.StringIO(), io.StringIO()
        with (
            patched_environ({"RAGLINE_PG_DATABASE": install.pg_database}),
            redirect_stdout(out),
            redirect_stderr(err),
        ):
            try:
                rc = cli_main(["embeddings", *args])
            except SystemExit as exc:  # argparse
                rc = int(exc.code or 0)
        return Ran(rc, out.getvalue(), err.getvalue())

    return await asyncio.to_thread(go)


async def test_create_space_registry_and_partition(install, pool):
    r = await cli(install, "create-space", "mini256", "--truncate-dim", "256", "--json")
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)
    assert (made["state"], made["dim"], made["truncate_dim"], made["recipe"]) == (
        "shadow",
        256,
        256,
        "header",
    )
    async with pool.connection() as conn:
        names = {s.name: s for s in await list_spaces(conn)}
        assert names["primary"].state == "live" and names["primary"].is_primary
        cur = await conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s",
            (f"space_vectors_s{made['space_id']}",),
        )
        defs = " ".join(r[0] for r in await cur.fetchall())
    assert "hnsw" in defs and "vector(256)" in defs
    # a second space of the same name, a bad name, a bad recipe: refused, nothing created
    assert (await cli(install, "create-space", "mini256")).returncode == 2
    assert (await cli(install, "create-space", "Bad Name!")).returncode != 0
    assert (await cli(install, "create-space", "x", "--recipe", "html")).returncode == 2


async def test_backfill_resumes_after_sigkill_without_re_embedding(install, pool):
    tenant = unique_tenant("sp")
    await seed(pool, tenant, docs=12, children=8)  # 96 children
    assert (await cli(install, "create-space", "plain", "--recipe", "plain")).returncode == 0
    async with pool.connection() as conn:
        space = await get_space(conn, "plain")
        await conn.commit()
    env = {**os.environ, "RAGLINE_PG_DATABASE": install.pg_database}
    # throttled, small batches: it is still running when it is killed
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragline.cli",
            "embeddings",
            "backfill",
            "--space",
            "plain",
            "--batch-size",
            "4",
            "--max-rate",
            "8",
            "--progress-every",
            "0",
        ],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    done_at_kill = 0
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            async with pool.connection() as conn:
                done_at_kill, total = await count_progress(conn, space)
                await conn.commit()
            if done_at_kill >= 16:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert "chunks/s, eta" in err  # progress with an ETA
    async with pool.connection() as conn:
        done_at_kill, total = await count_progress(conn, space)
        await conn.commit()
    assert total == 96 and 16 <= done_at_kill < 96

    r = await cli(install, "backfill", "--space", "plain", "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    # exactly the chunks that had no vector were embedded again: nothing finished twice
    assert report["written"] == 96 - done_at_kill
    assert report["done"] == report["total"] == 96
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*), count(DISTINCT chunk_id), min(vector_dims(embedding)),"
            " max(vector_dims(embedding)) FROM space_vectors WHERE space_id = %s",
            (space.space_id,),
        )
        assert await cur.fetchone() == (96, 96, 384, 384)
        # vectors are of the recipe's text (plain: no header) and unit length
        cur = await conn.execute(
            "SELECT v.text_hash = encode(sha256(convert_to(c.text, 'UTF8')), 'hex'),"
            " abs(vector_norm(v.embedding) - 1) < 1e-4"
            " FROM space_vectors v JOIN chunks c USING (tenant_id, chunk_id)"
            " WHERE v.space_id = %s",
            (space.space_id,),
        )
        assert all(a and b for a, b in await cur.fetchall())
    # a finished space: a further run writes nothing
    again = await cli(install, "backfill", "--space", "plain", "--json", "--quiet")
    assert json.loads(again.stdout)["written"] == 0
