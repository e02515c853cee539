"""The embeddings backfill Job: off by default; when on, `ragline embeddings backfill`
for the named shadow space with the admin DSN, throttled, retried (each retry resumes),
no Kafka, Postgres-only egress; a missing space fails the render."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from _deploy_helpers import Render, by_component, container, env_of, kinds, pod_spec

ON = {
    "embeddingsBackfill": {
        "enabled": True,
        "space": "minilm-256",
        "maxRate": 40,
        "env": {"RAGLINE_EMBEDDER_THREADS": 2},
    }
}


def _job(docs: list[dict[str, Any]]) -> dict[str, Any]:
    jobs = [j for j in kinds(docs, "Job") if j["metadata"]["name"].endswith("-minilm-256")]
    assert len(jobs) == 1
    return jobs[0]


def test_backfill_is_off_by_default(render: Render) -> None:
    docs = render()
    assert not [j for j in kinds(docs, "Job") if "backfill" in j["metadata"]["name"]]
    assert "backfill" not in by_component(docs, "NetworkPolicy")


def test_backfill_job(render: Render) -> None:
    docs = render(values=ON)
    job = _job(docs)
    assert job["metadata"]["name"] == "rel-ragline-backfill-minilm-256"
    assert "helm.sh/hook" not in job["metadata"].get("annotations", {})
    assert job["metadata"]["labels"]["ragline.io/space"] == "minilm-256"
    assert job["spec"]["backoffLimit"] == 6
    pod = pod_spec(job)
    assert pod["restartPolicy"] == "Never"
    c = container(pod)
    assert c["args"] == [
        "embeddings",
        "backfill",
        "--space",
        "minilm-256",
        "--batch-size",
        "64",
        "--max-rate",
        "40",
    ]
    env = env_of(pod)
    assert env["RAGLINE_EMBEDDER_THREADS"]["value"] == "2"
    assert "secretKeyRef" in env["RAGLINE_PG_DSN"]["valueFrom"]  # the admin DSN
    assert not any(k.startswith("RAGLINE_KAFKA_SASL") for k in env)
    np_ = by_component(docs, "NetworkPolicy")["backfill"]
    ports = {p["port"] for rule in np_["spec"]["egress"] for p in rule.get("ports", [])}
    assert 5432 in ports and 9092 not in ports
    kubernetes_validate.validate(job, "1.30", strict=True)


def test_unthrottled_backfill_has_no_max_rate(render: Render) -> None:
    docs = render(values={"embeddingsBackfill": {**ON["embeddingsBackfill"], "maxRate": 0}})
    assert "--max-rate" not in container(pod_spec(_job(docs)))["args"]


@pytest.mark.parametrize("space", ["", "Bad Name"])
def test_backfill_needs_a_valid_space(render: Render, space: str) -> None:
    with pytest.raises(Exception, match="space"):
        render(values={"embeddingsBackfill": {"enabled": True, "space": space}})
