"""The local stack against real servers: topics, pgvector, migrations, the RLS-bound query
role, external components, and the ``ragline stack`` CLI on a private second stack."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import errors as pge
from psycopg import sql

from ragline.config import Settings
from ragline.events import ALL_TOPICS
from ragline.platform.stack import StackError, StackManager, StackSettings
from ragline.platform.stack.postgres import maintenance_dsn
from ragline.platform.stack.process import is_running
from ragline.platform.stack.settings import Component
from ragline.platform.stack.testing import (
    CLEARED_ENV,
    ServiceProcess,
    free_port,
    reap_stale_test_stacks,
    stack_env,
)
from ragline.runtime.topics import topic_partitions
from ragline.store.migrate import (
    MigrationChecksumError,
    MigrationError,
    apply_migrations,
    load_migrations,
    migrate,
)
from ragline.store.query_role import QueryRole, ensure_query_role

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[3]


async def test_every_topic_exists_with_the_configured_partitions(stack: Settings) -> None:
    counts = await topic_partitions(stack.kafka_bootstrap, ALL_TOPICS)
    assert counts == {t: stack.kafka_partitions for t in ALL_TOPICS}


async def test_pgvector_is_installed_and_answers_a_vector_query(stack: Settings) -> None:
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = await cur.fetchone()
        assert row is not None, "CREATE EXTENSION vector did not run"
        await conn.execute("CREATE TEMP TABLE v (id int, e vector(3))")
        await conn.execute(
            "INSERT INTO v VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]')"
        )
        await conn.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")
        cur = await conn.execute("SELECT id FROM v ORDER BY e <=> '[1,0.05,0]' LIMIT 2")
        assert [r[0] for r in await cur.fetchall()] == [1, 3]


async def test_local_postgres_keeps_statement_text_out_of_its_log(stack: Settings) -> None:
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute("SHOW log_min_error_statement")
        assert await cur.fetchone() == ("panic",)


async def test_migrations_are_recorded_and_rerunning_changes_nothing(stack: Settings) -> None:
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute("SELECT version, checksum FROM schema_migrations ORDER BY 1")
        recorded = dict(await cur.fetchall())
    assert recorded == {m.version: m.checksum for m in load_migrations()}
    again = await asyncio.to_thread(migrate, stack)
    assert again.applied == ()
    assert again.already_applied == len(recorded)


async def test_query_role_is_plain_and_owns_nothing(stack: Settings) -> None:
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute(
            """SELECT r.rolcanlogin, r.rolsuper, r.rolbypassrls, r.rolcreaterole,
                      r.rolcreatedb,
                      (SELECT count(*) FROM pg_class c WHERE c.relowner = r.oid),
                      has_database_privilege(r.oid, current_database(), 'CONNECT'),
                      has_schema_privilege(r.oid, 'public', 'USAGE'),
                      has_schema_privilege(r.oid, 'public', 'CREATE')
                 FROM pg_roles r WHERE r.rolname = %s""",
            (stack.pg_query_role,),
        )
        row = await cur.fetchone()
    assert row == (True, False, False, False, False, 0, True, True, False)


@pytest.fixture
async def rls_table(stack: Settings) -> str:
    """A table guarded like the real ones (tenant + acl groups, FORCE RLS)."""
    name = f"rls_probe_{uuid.uuid4().hex[:8]}"
    ident = sql.Identifier(name)
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as c:
        await c.execute(
            sql.SQL("CREATE TABLE {} (tenant_id text, acl_groups text[], v int)").format(ident)
        )
        await c.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(ident))
        await c.execute(sql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(ident))
        await c.execute(
            sql.SQL(
                """CREATE POLICY p ON {} FOR SELECT TO ragline_query USING (
                   tenant_id = current_setting('ragline.tenant', true)
                   AND acl_groups
                       && string_to_array(current_setting('ragline.groups', true), ','))"""
            ).format(ident)
        )
        await c.execute(sql.SQL("GRANT SELECT ON {} TO ragline_query").format(ident))
        await c.execute(
            sql.SQL(
                "INSERT INTO {} VALUES "
                "('ta', '{{g1}}', 1), ('ta', '{{g2}}', 2), ('tb', '{{g1}}', 3)"
            ).format(ident)
        )
    return name


async def _visible(conn: psycopg.AsyncConnection, table: str) -> list[int]:
    cur = await conn.execute(sql.SQL("SELECT v FROM {} ORDER BY v").format(sql.Identifier(table)))
    return [r[0] for r in await cur.fetchall()]


async def test_query_role_cannot_bypass_rls(stack: Settings, rls_table: str) -> None:
    async with await psycopg.AsyncConnection.connect(stack.query_dsn(), autocommit=True) as q:
        # no tenant/groups set: fails closed
        assert await _visible(q, rls_table) == []
        async with q.transaction():
            await q.execute("SELECT set_config('ragline.tenant', 'ta', true)")
            await q.execute("SELECT set_config('ragline.groups', 'g1', true)")
            assert await _visible(q, rls_table) == [1]
        # settings were transaction-local: closed again
        assert await _visible(q, rls_table) == []
        await q.execute("SET row_security = off")
        with pytest.raises(pge.InsufficientPrivilege):
            await _visible(q, rls_table)
        await q.execute("RESET row_security")
        bypass_attempts = [
            sql.SQL("ALTER TABLE {} DISABLE ROW LEVEL SECURITY").format(sql.Identifier(rls_table)),
            sql.SQL("DROP POLICY p ON {}").format(sql.Identifier(rls_table)),
            sql.SQL("SET ROLE postgres"),
            sql.SQL("ALTER ROLE ragline_query BYPASSRLS"),
            sql.SQL("CREATE TABLE mine (x int)"),
        ]
        for stmt in bypass_attempts:
            with pytest.raises(pge.InsufficientPrivilege):
                await q.execute(stmt)


async def test_query_role_sees_documents_only_with_tenant_and_group(
    stack: Settings, tenant: str
) -> None:
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as a:
        await a.execute(
            "INSERT INTO documents (tenant_id, document_id, status, acl_groups) "
            "VALUES (%s, 'test:rls', 'indexed', '{hr}')",
            (tenant,),
        )
    try:
        async with await psycopg.AsyncConnection.connect(stack.query_dsn()) as q:
            query = "SELECT document_id FROM documents WHERE tenant_id = %s"
            assert await (await q.execute(query, (tenant,))).fetchall() == []
            for groups, expected in (("eng", []), ("eng,hr", [("test:rls",)])):
                async with q.transaction():
                    await q.execute("SELECT set_config('ragline.tenant', %s, true)", (tenant,))
                    await q.execute("SELECT set_config('ragline.groups', %s, true)", (groups,))
                    assert await (await q.execute(query, (tenant,))).fetchall() == expected
    finally:
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as a:
            await a.execute("DELETE FROM documents WHERE tenant_id = %s", (tenant,))


@pytest.fixture
def scratch_db(stack: Settings):  # type: ignore[no-untyped-def]
    """A database of its own, so runner tests never touch the shared schema."""
    name = f"mig_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(maintenance_dsn(stack), autocommit=True) as c:
        c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield psycopg.conninfo.make_conninfo(stack.admin_dsn(), dbname=name)
    with psycopg.connect(maintenance_dsn(stack), autocommit=True) as c:
        c.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _write(d: Path, name: str, body: str) -> None:
    (d / name).write_text(textwrap.dedent(body))


async def test_runner_is_safe_under_concurrency_and_refuses_edits(
    scratch_db: str, tmp_path: Path
) -> None:
    _write(tmp_path, "0001_a.sql", "CREATE TABLE a (x int); INSERT INTO a VALUES (1);")
    _write(tmp_path, "0002_b.sql", "CREATE TABLE b (y int);")
    runs = await asyncio.gather(
        *(
            asyncio.to_thread(apply_migrations, scratch_db, migrations=load_migrations(tmp_path))
            for _ in range(4)
        )
    )
    assert sorted(len(r.applied) for r in runs) == [0, 0, 0, 2]
    with psycopg.connect(scratch_db) as c:
        assert c.execute("SELECT count(*) FROM a").fetchone() == (1,)
        assert c.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall() == [
            (1,),
            (2,),
        ]
    _write(tmp_path, "0002_b.sql", "CREATE TABLE b (y bigint);")
    with pytest.raises(MigrationChecksumError):
        apply_migrations(scratch_db, migrations=load_migrations(tmp_path))


async def test_a_failing_migration_is_rolled_back_whole(scratch_db: str, tmp_path: Path) -> None:
    _write(tmp_path, "0001_ok.sql", "CREATE TABLE ok (x int);")
    _write(tmp_path, "0002_bad.sql", "CREATE TABLE half (x int);\nSELEC broken;")
    with pytest.raises(MigrationError, match="0002_bad"):
        apply_migrations(scratch_db, migrations=load_migrations(tmp_path))
    with psycopg.connect(scratch_db) as c:
        assert c.execute("SELECT to_regclass('ok') IS NOT NULL").fetchone() == (True,)
        assert c.execute("SELECT to_regclass('half') IS NULL").fetchone() == (True,)
        assert c.execute("SELECT max(version) FROM schema_migrations").fetchone() == (1,)
    _write(tmp_path, "0002_bad.sql", "CREATE TABLE half (x int);")  # fixed, never applied
    assert [
        m.label for m in apply_migrations(scratch_db, migrations=load_migrations(tmp_path)).applied
    ] == ["0002_bad"]


async def test_external_components_are_used_not_started(stack: Settings, tmp_path: Path) -> None:
    ext = Settings(
        state_dir=tmp_path / "ext",
        pg_dsn=stack.admin_dsn(),
        pg_query_dsn=stack.query_dsn(),
        kafka_bootstrap=stack.kafka_bootstrap,
        opensearch_url=stack.opensearch_url,
    )
    manager = StackManager(ext, StackSettings(components=frozenset(Component)))
    # a Postgres DSN makes postgres external even though `components` lists it
    assert Component.POSTGRES not in manager.managed
    manager = StackManager(ext, StackSettings(components=frozenset()))
    report = await manager.up()
    assert {r.action for r in report.started} == {"external"}
    assert report.migrations.applied == ()
    assert report.topics.created == ()
    assert all(s.health.ok and not s.managed for s in await manager.status())
    assert {r.action for r in await manager.down()} == {"external"}
    assert all(s.health.ok for s in await manager.status())  # still running
    assert not (tmp_path / "ext" / "pgdata").exists()


async def test_a_taken_port_fails_with_the_component_and_its_log(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        settings = Settings(state_dir=tmp_path / "s", kafka_bootstrap=f"127.0.0.1:{port}")
        manager = StackManager(
            settings,
            StackSettings(
                components=frozenset({Component.KAFKA}), start_timeout_s=8, probe_timeout_s=0.5
            ),
            detached=False,
        )
        manager.paths.ensure()
        with pytest.raises(StackError) as info:
            await manager.servers[Component.KAFKA].start()
    assert info.value.component == "kafka"
    assert info.value.log == tmp_path / "s" / "logs" / "kafka.log"
    assert str(info.value.log) in str(info.value)
    assert not (tmp_path / "s" / "run" / "kafka.pid").exists()


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _pids(state: Path) -> dict[str, int]:
    out = {p.stem: int(p.read_text()) for p in (state / "run").glob("*.pid")}
    pm = state / "pgdata" / "postmaster.pid"
    if pm.exists():
        out["postmaster"] = int(pm.read_text().split()[0])
    return out


@pytest.fixture
def private_dir() -> Iterator[Path]:
    """Outside pytest's basetemp, which a concurrent pytest run may prune."""
    d = Path(tempfile.mkdtemp(prefix="ragline-cli-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_cli_up_twice_status_down(private_dir: Path) -> None:
    state = private_dir / "s"
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env.update(stack_env(state))
    try:
        t0 = time.monotonic()
        first = _cli(env, "stack", "up")
        cold = time.monotonic() - t0
        assert first.returncode == 0, first.stderr + first.stdout
        assert first.stdout.count(" started ") == 3
        pids = _pids(state)
        assert set(pids) == {"postgres", "kafka", "opensearch", "postmaster"}

        t0 = time.monotonic()
        second = _cli(env, "stack", "up")
        warm = time.monotonic() - t0
        assert second.returncode == 0, second.stderr + second.stdout
        assert second.stdout.count(" running ") == 3
        assert "0 applied" in second.stdout and "0 created" in second.stdout
        assert _pids(state) == pids  # no duplicates were started

        status = _cli(env, "stack", "status", "--json")
        assert status.returncode == 0, status.stdout
        rows = json.loads(status.stdout)
        assert {r["component"]: (r["healthy"], r["pid"]) for r in rows} == {
            "postgres": (True, pids["postmaster"]),
            "kafka": (True, pids["kafka"]),
            "opensearch": (True, pids["opensearch"]),
        }
        print(f"cli stack up: cold {cold:.2f} s, warm {warm:.2f} s")
    finally:
        down = _cli(env, "stack", "down")
    assert down.returncode == 0, down.stderr + down.stdout
    assert all(not is_running(pid) for pid in pids.values())
    after = _cli(env, "stack", "status")
    assert after.returncode == 1
    assert after.stdout.count("UNHEALTHY") == 3


def test_service_process_helper_waits_for_metrics_and_stops_on_sigterm(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, signal, sys, time
        from prometheus_client import start_http_server
        start_http_server(int(os.environ["RAGLINE_METRICS_PORT"]))
        print("up", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            time.sleep(0.1)
        """
    )
    proc = ServiceProcess(
        "fake",
        env=dict(os.environ),
        log_path=tmp_path / "fake.log",
        metrics_port=free_port(),
        http_port=free_port(),
        argv=(sys.executable, "-c", script),
    )
    try:
        assert "python_info" in proc.wait_metrics(timeout_s=30)
        assert proc.terminate(timeout_s=10) == 0
        assert "up" in proc.log()
    finally:
        proc.cleanup()


async def test_a_differently_named_query_role_gets_the_policy_role(
    stack: Settings, scratch_db: str
) -> None:
    name = f"rq_{uuid.uuid4().hex[:8]}"
    role = QueryRole(name=name, password="local-only")
    try:
        with psycopg.connect(scratch_db, autocommit=True) as c:
            with c.transaction():
                ensure_query_role(c, role)
            with c.transaction():
                ensure_query_role(c, role)  # idempotent
            row = c.execute(
                "SELECT rolcanlogin, rolbypassrls, rolsuper, "
                "pg_has_role(rolname, 'ragline_query', 'MEMBER') "
                "FROM pg_roles WHERE rolname = %s",
                (name,),
            ).fetchone()
            assert row == (True, False, False, True)
    finally:
        with psycopg.connect(scratch_db, autocommit=True) as c:
            c.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


async def test_stale_test_stacks_of_dead_sessions_are_reaped(private_dir: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live = private_dir / "ragline-stack-stale", private_dir / "ragline-stack-live"
    for d, owner in ((stale, dead.pid), (live, os.getpid())):
        d.mkdir()
        (d / "owner.pid").write_text(f"{owner}\n")
    settings = Settings(
        state_dir=stale / "state", kafka_bootstrap=f"127.0.0.1:{free_port()}", pg_dsn=None
    )
    manager = StackManager(settings, StackSettings(components=frozenset({Component.KAFKA})))
    manager.paths.ensure()
    broker = await manager.servers[Component.KAFKA].start()
    assert broker.pid is not None and is_running(broker.pid)

    assert await reap_stale_test_stacks(private_dir) == [stale]
    assert not is_running(broker.pid)
    assert not stale.exists()
    assert live.exists()
