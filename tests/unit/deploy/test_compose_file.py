"""deploy/docker-compose.yml: valid Compose (compose-spec), real engines, every ragline
service from one image configured by environment variables only, no secret inlined."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from _deploy_helpers import REPO

from ragline.catalog import SERVICES

COMPOSE = REPO / "deploy" / "docker-compose.yml"
EXAMPLE = REPO / "deploy" / "compose.env.example"
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?)([^}]*))?\}")
SECRETS = (
    "POSTGRES_PASSWORD",
    "RAGLINE_QUERY_DB_PASSWORD",
    "RAGLINE_QUERY_JWT_SECRET",
    "RAGLINE_CONNECTOR_WEBHOOK_SECRET",
)


def example_env() -> dict[str, str]:
    out = {}
    for line in EXAMPLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default}, ${VAR:?error} (what `docker compose` does)."""

    def sub(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        value = env.get(name, "")
        if op == ":?" and not value:
            raise KeyError(f"{name} is required: {arg}")
        return value if value or op != ":-" else arg

    return VAR.sub(sub, text)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(interpolate(COMPOSE.read_text(), example_env()))


def test_required_variables_are_in_the_example() -> None:
    env = example_env()
    required = {m.group(1) for m in VAR.finditer(COMPOSE.read_text()) if m.group(2) == ":?"}
    assert set(SECRETS) <= required
    assert required <= set(env)
    with pytest.raises(KeyError, match="POSTGRES_PASSWORD"):
        interpolate(COMPOSE.read_text(), {k: v for k, v in env.items() if k != "POSTGRES_PASSWORD"})


def test_example_holds_placeholders_only() -> None:
    env = example_env()
    for k in SECRETS:
        assert env[k].startswith("change-me"), k


def test_valid_compose_spec(compose: dict[str, Any]) -> None:
    compose_spec = pytest.importorskip("compose_spec", reason="pip install compose-spec (dev)")
    parsed = compose_spec.PyCompose.from_json(json.dumps(compose))
    assert set(parsed.service_names()) == set(compose["services"])
    with pytest.raises(ValueError):
        compose_spec.PyCompose.from_json(json.dumps({"services": {"a": {"imagee": "x"}}}))


def test_real_engines(compose: dict[str, Any]) -> None:
    s = compose["services"]
    kafka = s["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    assert "controller" in kafka["environment"]["KAFKA_PROCESS_ROLES"]  # KRaft, no ZooKeeper
    assert not any("zookeeper" in name for name in s)
    assert kafka["environment"]["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert re.fullmatch(r"pgvector/pgvector:pg1[78]", s["postgres"]["image"])
    os_ = s["opensearch"]
    assert os_["image"].startswith("opensearchproject/opensearch:")
    assert os_["environment"]["discovery.type"] == "single-node"
    assert os_["environment"]["DISABLE_SECURITY_PLUGIN"] == "true"
    for name in ("kafka", "postgres", "opensearch"):
        assert "healthcheck" in s[name]


def test_every_service_from_one_image(compose: dict[str, Any]) -> None:
    s = compose["services"]
    ragline = {k: v for k, v in s.items() if k not in ("kafka", "postgres", "opensearch")}
    assert set(ragline) == set(SERVICES) | {"migrate", "topics"}
    assert len({v["image"] for v in ragline.values()}) == 1
    for name in SERVICES:
        svc = s[name]
        assert svc["command"] == ["run", name]
        assert svc["read_only"] is True and svc["cap_drop"] == ["ALL"]
        assert set(svc["tmpfs"]) == {"/tmp", "/cache"}
        deps = svc["depends_on"]
        assert deps["migrate"]["condition"] == "service_completed_successfully"
        assert deps["topics"]["condition"] == "service_completed_successfully"
    assert s["migrate"]["command"] == ["migrate"] and s["migrate"]["restart"] == "no"
    assert s["topics"]["command"] == ["topics", "create"]
    assert s["migrate"]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert s["indexer"]["depends_on"]["opensearch"]["condition"] == "service_healthy"
    assert s["query"]["ports"] == ["127.0.0.1:8080:8080"]
    assert s["connector"]["ports"] == ["127.0.0.1:8081:8081"]


def test_configuration_is_environment_only(compose: dict[str, Any], env_names: set[str]) -> None:
    s = compose["services"]
    for name in (*SERVICES, "migrate", "topics"):
        env = s[name]["environment"]
        assert "volumes" not in s[name]  # nothing mounted: env vars only
        ragline = {k for k in env if k.startswith("RAGLINE_")}
        assert ragline - env_names == set(), name
        assert env["RAGLINE_KAFKA_BOOTSTRAP"] == "kafka:9092"
        assert env["RAGLINE_OPENSEARCH_URL"] == "http://opensearch:9200"
        assert env["RAGLINE_PG_DSN"].endswith("@postgres:5432/ragline")
    assert "RAGLINE_QUERY_JWT_SECRET" in s["query"]["environment"]
    assert "RAGLINE_QUERY_JWT_SECRET" not in s["parser"]["environment"]
    assert "RAGLINE_CONNECTOR_WEBHOOK_SECRET" in s["connector"]["environment"]


def test_no_secret_literal_in_the_file() -> None:
    raw = yaml.safe_load(COMPOSE.read_text())
    for svc in raw["services"].values():
        for k, v in (svc.get("environment") or {}).items():
            if any(w in k for w in ("PASSWORD", "SECRET", "DSN")):
                assert re.search(r"\$\{[A-Z_]+:\?", str(v)), (k, v)


KAFKA_IMAGE = re.compile(r"apache/kafka:([0-9][0-9.]*[0-9])")


def test_compose_and_docs_name_the_stacks_kafka(compose: dict[str, Any]) -> None:
    """One Kafka version everywhere (issue 29): the local stack's (engines/kafka/pom.xml),
    the compose file's image and every ``apache/kafka:X`` the docs name."""
    from ragline.platform.stack.engines import engine

    version = engine("kafka").version
    assert compose["services"]["kafka"]["image"] == f"apache/kafka:{version}"
    named = {
        (str(p.relative_to(REPO)), m.group(1))
        for p in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
        for m in KAFKA_IMAGE.finditer(p.read_text())
    }
    assert named, "the docs name the compose file's Kafka image"
    assert {v for _, v in named} == {version}, sorted(named)
