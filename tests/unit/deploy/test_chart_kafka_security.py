"""Kafka TLS/SASL in the chart: the RAGLINE_KAFKA_* variables of the runtime reach every
workload that talks to Kafka (and only those), credentials only by Secret reference, the
CA bundle mounted read-only, and KEDA's triggers authenticated with the same Secrets."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest
from _deploy_helpers import Render, by_component, container, env_of, kinds, pod_spec, pod_specs

from ragline.runtime.kafka_security import aiokafka_options
from ragline.runtime.settings import Settings
from ragline.runtime.topology import TOPOLOGY

CONSUMERS = {t.name.replace("_", "-") for t in TOPOLOGY}
KAFKA_WORKLOADS = {f"Deployment/{c}" for c in CONSUMERS} | {"Job/topics", "CronJob/gc"}
NO_KAFKA = {"Deployment/query", "Job/migrate"}
TRANSPORT_ENV = {
    "RAGLINE_KAFKA_SECURITY_PROTOCOL",
    "RAGLINE_KAFKA_SASL_MECHANISM",
    "RAGLINE_KAFKA_SASL_USERNAME",
    "RAGLINE_KAFKA_SASL_PASSWORD",
    "RAGLINE_KAFKA_SSL_CAFILE",
}
SASL_SSL: dict[str, Any] = {
    "kafka": {
        "security": {
            "protocol": "SASL_SSL",
            "sasl": {
                "mechanism": "SCRAM-SHA-256",
                "existingSecret": "mk-sasl",
                "usernameKey": "user",
                "passwordKey": "pass",
            },
            "tls": {"existingSecret": "mk-ca", "caKey": "bundle.pem"},
        }
    },
    "gc": {"enabled": True},
}
KEDA_ALL = {
    "services": {
        t.name: {"keda": {"enabled": True, "minReplicas": 1, "maxReplicas": 6, "lagThreshold": 10}}
        for t in TOPOLOGY
    }
}


def _workloads(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``Kind/component`` -> pod spec."""
    return {
        f"{d['kind']}/{d['metadata']['labels']['app.kubernetes.io/component']}": pod_spec(d)
        for d in docs
        if d.get("kind") in ("Deployment", "Job", "CronJob")
    }


@pytest.fixture(scope="module")
def sasl_docs(render: Render) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = render(values={**SASL_SSL, **KEDA_ALL})
    return docs


def test_security_off_renders_no_kafka_credentials(render: Render) -> None:
    docs = render(values={**KEDA_ALL, "gc": {"enabled": True}})
    for where, spec in _workloads(docs).items():
        assert not TRANSPORT_ENV & set(env_of(spec)), where
        assert "kafka-tls" not in {v["name"] for v in spec["volumes"]}, where
    assert not kinds(docs, "TriggerAuthentication")
    for so in kinds(docs, "ScaledObject"):
        for t in so["spec"]["triggers"]:
            assert "authenticationRef" not in t
            assert not {"sasl", "tls"} & set(t["metadata"])
    # and the runtime then connects in PLAINTEXT, as before
    assert aiokafka_options(Settings()) == {}


def test_sasl_ssl_reaches_every_kafka_workload(sasl_docs: list[dict[str, Any]]) -> None:
    workloads = _workloads(sasl_docs)
    assert set(workloads) == KAFKA_WORKLOADS | NO_KAFKA
    for where in KAFKA_WORKLOADS:
        spec = workloads[where]
        env = env_of(spec)
        assert env["RAGLINE_KAFKA_SECURITY_PROTOCOL"]["value"] == "SASL_SSL", where
        assert env["RAGLINE_KAFKA_SASL_MECHANISM"]["value"] == "SCRAM-SHA-256", where
        for name, key in (
            ("RAGLINE_KAFKA_SASL_USERNAME", "user"),
            ("RAGLINE_KAFKA_SASL_PASSWORD", "pass"),
        ):
            assert "value" not in env[name], (where, name)
            assert env[name]["valueFrom"] == {"secretKeyRef": {"name": "mk-sasl", "key": key}}
        # the CA: a read-only mount of that one key, where RAGLINE_KAFKA_SSL_CAFILE points
        cafile = env["RAGLINE_KAFKA_SSL_CAFILE"]["value"]
        mounts = {m["name"]: m for m in container(spec)["volumeMounts"]}
        assert mounts["kafka-tls"]["readOnly"] is True, where
        vol = {v["name"]: v for v in spec["volumes"]}["kafka-tls"]["secret"]
        assert vol["secretName"] == "mk-ca"
        assert vol["items"] == [{"key": "bundle.pem", "path": "ca.crt"}]  # never the password
        assert cafile == f"{mounts['kafka-tls']['mountPath']}/ca.crt"
    for where in NO_KAFKA:  # least privilege: no broker credential where none is needed
        spec = workloads[where]
        assert not TRANSPORT_ENV & set(env_of(spec)), where
        assert "kafka-tls" not in {v["name"] for v in spec["volumes"]}, where


def test_rendered_variables_configure_the_runtime(sasl_docs: list[dict[str, Any]]) -> None:
    """The variables the chart sets, with the Secret values a pod would see, give the
    runtime a SASL_SSL SCRAM-SHA-256 client (the settings class parses them for real)."""
    env = env_of(_workloads(sasl_docs)["Deployment/parser"])
    values = {n: e.get("value") for n, e in env.items() if n in TRANSPORT_ENV}
    values["RAGLINE_KAFKA_SASL_USERNAME"] = "svc"
    values["RAGLINE_KAFKA_SASL_PASSWORD"] = "pw"
    values.pop("RAGLINE_KAFKA_SSL_CAFILE")  # the path exists only in the pod
    settings = Settings(**{k.removeprefix("RAGLINE_").lower(): v for k, v in values.items()})
    opts = aiokafka_options(settings)
    assert opts["security_protocol"] == "SASL_SSL"
    assert opts["sasl_mechanism"] == "SCRAM-SHA-256"
    assert opts["sasl_plain_username"] == "svc" and "ssl_context" in opts


def test_no_kafka_password_can_enter_the_rendered_output(
    render: Render, sasl_docs: list[dict[str, Any]]
) -> None:
    # the chart renders no Secret of its own for Kafka: only references
    assert not kinds(sasl_docs, "Secret")
    text = json.dumps(sasl_docs)
    assert "RAGLINE_KAFKA_SASL_PASSWORD" in text
    for _, spec in pod_specs(sasl_docs):
        for e in container(spec)["env"]:
            if e["name"] in ("RAGLINE_KAFKA_SASL_PASSWORD", "RAGLINE_KAFKA_SASL_USERNAME"):
                assert set(e) == {"name", "valueFrom"}
    # and no value can smuggle one in: no inline key, no env variable, anywhere
    sentinel = "SENTINEL-KAFKA-PASSWORD"
    for bad in (
        {"kafka": {"security": {"sasl": {"password": sentinel}}}},
        {"kafka": {"security": {"sasl": {"username": "ragline"}}}},
        {"env": {"RAGLINE_KAFKA_SASL_PASSWORD": sentinel}},
        {"services": {"parser": {"env": {"RAGLINE_KAFKA_SASL_PASSWORD": sentinel}}}},
        {"gc": {"env": {"RAGLINE_KAFKA_SASL_PASSWORD": sentinel}}},
    ):
        render(values=bad, fail=True)


def test_keda_triggers_use_the_same_secrets(sasl_docs: list[dict[str, Any]]) -> None:
    (ta,) = kinds(sasl_docs, "TriggerAuthentication")
    refs = {r["parameter"]: (r["name"], r["key"]) for r in ta["spec"]["secretTargetRef"]}
    assert refs == {
        "username": ("mk-sasl", "user"),
        "password": ("mk-sasl", "pass"),
        "ca": ("mk-ca", "bundle.pem"),
    }
    objs = by_component(sasl_docs, "ScaledObject")
    assert {c for c in objs} == CONSUMERS
    for so in objs.values():
        for t in so["spec"]["triggers"]:
            assert t["authenticationRef"] == {"name": ta["metadata"]["name"]}
            assert t["metadata"]["sasl"] == "scram_sha256"
            assert t["metadata"]["tls"] == "enable"


@pytest.mark.parametrize(
    ("security", "sasl", "tls", "auth_params"),
    [
        # SASL without TLS (a private network): PLAIN, no CA anywhere
        (
            {"protocol": "SASL_PLAINTEXT", "sasl": {"mechanism": "PLAIN", "existingSecret": "s"}},
            "plaintext",
            None,
            {"username", "password"},
        ),
        # TLS against a public CA: no Secret at all, KEDA only turns TLS on
        ({"protocol": "SSL"}, None, "enable", None),
        # TLS with a private CA, no SASL
        ({"protocol": "SSL", "tls": {"existingSecret": "ca"}}, None, "enable", {"ca"}),
        # SCRAM-SHA-512, the runtime's default mechanism
        (
            {"protocol": "SASL_SSL", "sasl": {"existingSecret": "s"}},
            "scram_sha512",
            "enable",
            {"username", "password"},
        ),
    ],
)
def test_each_protocol(
    render: Render,
    security: dict[str, Any],
    sasl: str | None,
    tls: str | None,
    auth_params: set[str] | None,
) -> None:
    docs = render(values={"kafka": {"security": security}, **KEDA_ALL})
    parser = env_of(_workloads(docs)["Deployment/parser"])
    assert parser["RAGLINE_KAFKA_SECURITY_PROTOCOL"]["value"] == security["protocol"]
    assert ("RAGLINE_KAFKA_SASL_PASSWORD" in parser) == (sasl is not None)
    has_ca = "tls" in security
    assert ("RAGLINE_KAFKA_SSL_CAFILE" in parser) == has_ca
    tas = kinds(docs, "TriggerAuthentication")
    if auth_params is None:
        assert not tas
    else:
        (ta,) = tas
        assert {r["parameter"] for r in ta["spec"]["secretTargetRef"]} == auth_params
    for so in kinds(docs, "ScaledObject"):
        for t in so["spec"]["triggers"]:
            assert t["metadata"].get("sasl") == sasl
            assert t["metadata"].get("tls") == tls
            assert ("authenticationRef" in t) == (auth_params is not None)
    for d in docs:
        if d["kind"] in ("Deployment", "Job", "CronJob"):
            kubernetes_validate.validate(d, "1.30", strict=True)


def test_keda_auth_only_with_keda(render: Render) -> None:
    docs = render(values=SASL_SSL)
    assert not kinds(docs, "ScaledObject") and not kinds(docs, "TriggerAuthentication")


@pytest.mark.parametrize(
    ("security", "message"),
    [
        (
            {"protocol": "SASL_SSL"},
            "kafka.security.sasl.existingSecret is required with protocol SASL_SSL",
        ),
        (
            {
                "protocol": "SASL_PLAINTEXT",
                "sasl": {"existingSecret": "s"},
                "tls": {"existingSecret": "ca"},
            },
            "protocol SASL_PLAINTEXT does not use TLS",
        ),
        ({"protocol": "TLS"}, "protocol"),
        (
            {"protocol": "SASL_SSL", "sasl": {"mechanism": "GSSAPI", "existingSecret": "s"}},
            "mechanism",
        ),
    ],
)
def test_misconfigurations_are_refused(
    render: Render, security: dict[str, Any], message: str
) -> None:
    (err,) = render(values={"kafka": {"security": security}}, fail=True)
    assert message in err["error"]
