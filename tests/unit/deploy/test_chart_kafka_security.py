"""Kafka TLS/SASL in the chart: the RAGLINE_KAFKA_* variables of the runtime reach every
workload that talks to Kafka (and only those), credentials only by Secret reference, the
CA bundle and the mutual-TLS client certificate mounted read-only, and KEDA's triggers
authenticated with the same Secrets."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest
from _deploy_helpers import Render, by_component, container, env_of, kinds, pod_spec, pod_specs

from ragline.config import Settings
from ragline.errors import ConfigError
from ragline.runtime.kafka_security import aiokafka_options
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
    "RAGLINE_KAFKA_SSL_CERTFILE",
    "RAGLINE_KAFKA_SSL_KEYFILE",
    "RAGLINE_KAFKA_SSL_KEY_PASSWORD",
}
MTLS_ENV = {"RAGLINE_KAFKA_SSL_CERTFILE", "RAGLINE_KAFKA_SSL_KEYFILE"}
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


# ------------------------------------------------------------------ mutual TLS
# a Strimzi KafkaUser (authentication: tls) Secret: user.crt / user.key (+ user.p12,
# user.password and ca.crt, which must never reach the pods through this mount)
MTLS_TLS: dict[str, Any] = {
    "existingSecret": "mk-ca",
    "caKey": "bundle.pem",
    "clientSecret": "mk-user",
    "certKey": "user.crt",
    "keyKey": "user.key",
    "keyPasswordKey": "user.key-password",
}


def _mtls(protocol: str, **tls: Any) -> dict[str, Any]:
    security: dict[str, Any] = {"protocol": protocol, "tls": {**MTLS_TLS, **tls}}
    if protocol.startswith("SASL_"):
        security["sasl"] = {"existingSecret": "mk-sasl"}
    return {"kafka": {"security": security}, "gc": {"enabled": True}, **KEDA_ALL}


@pytest.fixture(scope="module")
def mtls_docs(render: Render) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = render(values=_mtls("SSL"))
    return docs


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_mutual_tls_reaches_every_kafka_workload(render: Render, protocol: str) -> None:
    docs = render(values=_mtls(protocol))
    workloads = _workloads(docs)
    assert set(workloads) == KAFKA_WORKLOADS | NO_KAFKA
    for where in KAFKA_WORKLOADS:
        spec = workloads[where]
        env = env_of(spec)
        assert env["RAGLINE_KAFKA_SECURITY_PROTOCOL"]["value"] == protocol, where
        assert ("RAGLINE_KAFKA_SASL_PASSWORD" in env) == (protocol == "SASL_SSL"), where
        # the certificate and the key: one read-only mount of exactly those two keys
        mounts = {m["name"]: m for m in container(spec)["volumeMounts"]}
        mount = mounts["kafka-client-tls"]
        assert mount["readOnly"] is True, where
        assert mount["mountPath"] != mounts["kafka-tls"]["mountPath"]
        vol = {v["name"]: v for v in spec["volumes"]}["kafka-client-tls"]["secret"]
        assert vol["secretName"] == "mk-user"
        assert vol["items"] == [
            {"key": "user.crt", "path": "client.crt"},
            {"key": "user.key", "path": "client.key", "mode": 0o440},  # root:fsGroup
        ]
        assert vol["defaultMode"] == 0o444
        assert env["RAGLINE_KAFKA_SSL_CERTFILE"] == {
            "name": "RAGLINE_KAFKA_SSL_CERTFILE",
            "value": f"{mount['mountPath']}/client.crt",
        }
        assert env["RAGLINE_KAFKA_SSL_KEYFILE"]["value"] == f"{mount['mountPath']}/client.key"
        # the key password: a reference into the same Secret, never a value
        assert env["RAGLINE_KAFKA_SSL_KEY_PASSWORD"] == {
            "name": "RAGLINE_KAFKA_SSL_KEY_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": "mk-user", "key": "user.key-password"}},
        }
        # the CA is still its own Secret and mount
        assert env["RAGLINE_KAFKA_SSL_CAFILE"]["value"] == (
            f"{mounts['kafka-tls']['mountPath']}/ca.crt"
        )
    for where in NO_KAFKA:
        spec = workloads[where]
        assert not TRANSPORT_ENV & set(env_of(spec)), where
        assert not {"kafka-tls", "kafka-client-tls"} & {v["name"] for v in spec["volumes"]}
    for d in docs:
        if d["kind"] in ("Deployment", "Job", "CronJob"):
            kubernetes_validate.validate(d, "1.30", strict=True)


def test_mutual_tls_options(render: Render) -> None:
    # an unencrypted key (the usual case): no password variable at all; the client Secret
    # need not be the CA's, and the system trust store still works without a private CA
    docs = render(values=_mtls("SSL", keyPasswordKey="", existingSecret=""))
    env = env_of(_workloads(docs)["Deployment/indexer"])
    assert set(env) >= MTLS_ENV
    assert "RAGLINE_KAFKA_SSL_KEY_PASSWORD" not in env
    assert "RAGLINE_KAFKA_SSL_CAFILE" not in env
    (ta,) = kinds(docs, "TriggerAuthentication")  # the client certificate alone makes one
    assert {r["parameter"] for r in ta["spec"]["secretTargetRef"]} == {"cert", "key"}
    # one Secret for CA and client certificate: two mounts, each with only its keys
    docs = render(values=_mtls("SSL", existingSecret="mk-user", caKey="ca.crt"))
    spec = _workloads(docs)["Job/topics"]
    vols = {v["name"]: v["secret"] for v in spec["volumes"] if "secret" in v}
    assert vols["kafka-tls"]["secretName"] == vols["kafka-client-tls"]["secretName"] == "mk-user"
    assert [i["key"] for i in vols["kafka-tls"]["items"]] == ["ca.crt"]
    assert [i["key"] for i in vols["kafka-client-tls"]["items"]] == ["user.crt", "user.key"]
    # without an fsGroup the key file could not be group-readable by the pod's user:
    # it falls back to the volume's defaultMode rather than an unreadable key
    values = _mtls("SSL")
    values["podDefaults"] = {"podSecurityContext": {"fsGroup": None}}
    spec = _workloads(render(values=values))["CronJob/gc"]
    vol = {v["name"]: v for v in spec["volumes"]}["kafka-client-tls"]["secret"]
    assert all("mode" not in i for i in vol["items"]) and vol["defaultMode"] == 0o444


def test_no_client_key_material_can_enter_the_rendered_output(
    render: Render, mtls_docs: list[dict[str, Any]]
) -> None:
    assert not kinds(mtls_docs, "Secret")  # only references, no Secret of the chart's
    for _, spec in pod_specs(mtls_docs):
        for e in container(spec)["env"]:
            if e["name"] == "RAGLINE_KAFKA_SSL_KEY_PASSWORD":
                assert set(e) == {"name", "valueFrom"}
    text = json.dumps(mtls_docs)
    assert "BEGIN" not in text and "user.p12" not in text and "user.password" not in text
    # no value can carry a certificate, a key or its password inline
    sentinel = "SENTINEL-KAFKA-KEY-PASSWORD"
    pem = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"
    for bad in (
        {"kafka": {"security": {"tls": {"keyPassword": sentinel}}}},
        {"kafka": {"security": {"tls": {"clientKey": pem}}}},
        {"kafka": {"security": {"tls": {"clientCert": pem}}}},
        {"env": {"RAGLINE_KAFKA_SSL_KEY_PASSWORD": sentinel}},
        {"services": {"parser": {"env": {"RAGLINE_KAFKA_SSL_KEY_PASSWORD": sentinel}}}},
        {"gc": {"env": {"RAGLINE_KAFKA_SSL_KEY_PASSWORD": sentinel}}},
    ):
        (err,) = render(values=bad, fail=True)
        assert sentinel not in err["error"] and "MIIE" not in err["error"]


def test_keda_gets_the_client_certificate(mtls_docs: list[dict[str, Any]]) -> None:
    (ta,) = kinds(mtls_docs, "TriggerAuthentication")
    refs = {r["parameter"]: (r["name"], r["key"]) for r in ta["spec"]["secretTargetRef"]}
    assert refs == {
        "ca": ("mk-ca", "bundle.pem"),
        "cert": ("mk-user", "user.crt"),
        "key": ("mk-user", "user.key"),
        "keyPassword": ("mk-user", "user.key-password"),
    }
    # `tls` stays trigger metadata only: KEDA refuses it in both places
    objs = by_component(mtls_docs, "ScaledObject")
    assert set(objs) == CONSUMERS
    for so in objs.values():
        for t in so["spec"]["triggers"]:
            assert t["metadata"]["tls"] == "enable" and "sasl" not in t["metadata"]
            assert t["authenticationRef"] == {"name": ta["metadata"]["name"]}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"kafka": {"security": {"tls": {"clientSecret": "mk-user"}}}},
            "kafka.security.tls.clientSecret (mutual TLS) is set but protocol PLAINTEXT",
        ),
        (
            {
                "kafka": {
                    "security": {
                        "protocol": "SASL_PLAINTEXT",
                        "sasl": {"existingSecret": "s"},
                        "tls": {"clientSecret": "mk-user"},
                    }
                }
            },
            "protocol SASL_PLAINTEXT does not use TLS",
        ),
        (
            {"kafka": {"security": {"protocol": "SSL", "tls": {"keyPasswordKey": "pw"}}}},
            "keyPasswordKey is set without kafka.security.tls.clientSecret",
        ),
        (
            {
                "kafka": {
                    "security": {"protocol": "SSL", "tls": {"clientSecret": "x", "keyKey": ""}}
                }
            },
            "keyKey",
        ),
    ],
)
def test_mutual_tls_misconfigurations_are_refused(
    render: Render, values: dict[str, Any], message: str
) -> None:
    (err,) = render(values=values, fail=True)
    assert message in err["error"]


def _self_signed(cert: Path, key: Path, key_password: str) -> None:
    cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "1", "-subj", "/CN=svc"]
    cmd += ["-keyout", str(key), "-out", str(cert), "-passout", f"pass:{key_password}"]
    subprocess.run(cmd, check=True, capture_output=True)


@pytest.mark.parametrize("password", ["k3y-pass", "wrong"])
def test_rendered_mutual_tls_configures_the_runtime(
    mtls_docs: list[dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    password: str,
) -> None:
    """The rendered variables, set in the environment as the pod would see them (the
    files at the rendered file names, the key password from the Secret), give the real
    Settings + aiokafka_options a mutual-TLS client; a wrong key password is the runtime's
    ConfigError, so the password variable is the one the runtime reads."""
    env = env_of(_workloads(mtls_docs)["Deployment/parser"])
    files = {
        n: PurePosixPath(e["value"])
        for n, e in env.items()
        if n in {"RAGLINE_KAFKA_SSL_CAFILE", *MTLS_ENV}
    }
    assert set(files) == {"RAGLINE_KAFKA_SSL_CAFILE", *MTLS_ENV}
    # the pod's directories only exist in the pod: the same file names in tmp_path
    local = {n: tmp_path / p.parent.name / p.name for n, p in files.items()}
    for path in local.values():
        path.parent.mkdir(exist_ok=True)
    cert = local["RAGLINE_KAFKA_SSL_CERTFILE"]
    _self_signed(cert, local["RAGLINE_KAFKA_SSL_KEYFILE"], "k3y-pass")
    local["RAGLINE_KAFKA_SSL_CAFILE"].write_bytes(cert.read_bytes())  # trust itself
    for name in TRANSPORT_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "RAGLINE_KAFKA_SECURITY_PROTOCOL", env["RAGLINE_KAFKA_SECURITY_PROTOCOL"]["value"]
    )
    for name, path in local.items():
        monkeypatch.setenv(name, str(path))
    assert "valueFrom" in env["RAGLINE_KAFKA_SSL_KEY_PASSWORD"]
    monkeypatch.setenv("RAGLINE_KAFKA_SSL_KEY_PASSWORD", password)
    settings = Settings()
    assert settings.kafka_ssl_keyfile == str(local["RAGLINE_KAFKA_SSL_KEYFILE"])
    if password == "wrong":
        with pytest.raises(ConfigError, match="Kafka TLS files unusable") as exc:
            aiokafka_options(settings)
        assert "wrong" not in str(exc.value) and "k3y-pass" not in str(exc.value)
        return
    opts = aiokafka_options(settings)
    assert opts["security_protocol"] == "SSL" and "ssl_context" in opts
