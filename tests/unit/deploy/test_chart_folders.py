"""`folders`: `ragline watch` as a Deployment and `ragline sync` as a CronJob per folder
(issue 36, item 6), rendered by the real helm binary and validated against Kubernetes
1.30's schemas: the folder mounted read-only, the source id always explicit, the admin
DSN and Kafka settings of the other publishers, and a NetworkPolicy each."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from _deploy_helpers import Render, by_component, container, env_of, kinds, pod_spec

FOLDER = {
    "name": "handbook",
    "tenant": "acme",
    "source": "handbook",
    "volume": {"persistentVolumeClaim": {"claimName": "handbook-docs", "readOnly": True}},
    "defaultGroups": ["all-staff", "eng"],
    "watch": {"enabled": True, "interval": 5},
    "sync": {"enabled": True, "schedule": "5 1 * * *", "extraArgs": ["--allow-deletes"]},
}


@pytest.fixture(scope="module")
def docs(render: Render) -> list[dict[str, Any]]:
    rendered: list[dict[str, Any]] = render(
        values={
            "kafka": {
                "security": {"protocol": "SASL_SSL", "sasl": {"existingSecret": "kafka-creds"}}
            },
            "folders": [FOLDER],
        }
    )
    return rendered


def test_no_folder_no_workload(render: Render) -> None:
    names = {d["metadata"]["name"] for d in render()}
    assert not any("watch-" in n or "sync-" in n for n in names)


def test_watch_deployment(docs: list[dict[str, Any]]) -> None:
    dep = by_component(docs, "Deployment")["watch-handbook"]
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "Recreate"
    pod = pod_spec(dep)
    c = container(pod)
    assert c["args"] == [
        "watch", "/data/handbook", "--tenant", "acme", "--source", "handbook",
        "--default-groups", "all-staff,eng", "--interval", "5",
        "--state-file", "/cache/watch-handbook.json",
    ]  # fmt: skip
    assert {"name": "folder", "mountPath": "/data/handbook", "readOnly": True} in c["volumeMounts"]
    (vol,) = [v for v in pod["volumes"] if v["name"] == "folder"]
    assert vol["persistentVolumeClaim"]["claimName"] == "handbook-docs"
    kubernetes_validate.validate(dep, "1.30", strict=True)


def test_sync_cronjob(docs: list[dict[str, Any]]) -> None:
    cj = by_component(docs, "CronJob")["sync-handbook"]
    assert cj["spec"]["schedule"] == "5 1 * * *"
    assert cj["spec"]["concurrencyPolicy"] == "Forbid"
    pod = pod_spec(cj)
    assert pod["restartPolicy"] == "Never"
    assert container(pod)["args"] == [
        "sync", "/data/handbook", "--tenant", "acme", "--source", "handbook",
        "--default-groups", "all-staff,eng", "--no-progress", "--allow-deletes",
    ]  # fmt: skip
    kubernetes_validate.validate(cj, "1.30", strict=True)


def test_both_publish_to_kafka_and_read_postgres_like_gc(docs: list[dict[str, Any]]) -> None:
    migrate = env_of(pod_spec(by_component(docs, "Job")["migrate"]))
    for kind, name in (("Deployment", "watch-handbook"), ("CronJob", "sync-handbook")):
        env = env_of(pod_spec(by_component(docs, kind)[name]))
        assert env["RAGLINE_PG_DSN"] == migrate["RAGLINE_PG_DSN"]
        assert "RAGLINE_KAFKA_SASL_PASSWORD" in env  # the cluster's credentials
        assert "RAGLINE_QUERY_JWT_SECRET" not in env
        assert "RAGLINE_CONNECTOR_WEBHOOK_SECRET" not in env
    policies = by_component(docs, "NetworkPolicy")
    assert {"watch-handbook", "sync-handbook"} <= set(policies)


def test_a_folder_without_a_source_is_refused(render: Render) -> None:
    bad = {k: v for k, v in FOLDER.items() if k != "source"}
    (err,) = render(values={"folders": [bad]}, fail=True)
    assert "source" in err["error"]
    assert (
        kinds(render(values={"folders": [{**FOLDER, "sync": {"enabled": False}}]}), "CronJob") == []
    )
