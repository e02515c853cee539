"""The `ragline gc` CronJob: off by default; when on, `ragline gc` on its schedule, never
two at once, with the migrate Job's admin DSN and RAGLINE_RETENTION_* from values."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest
from _deploy_helpers import CHART, REPO, Render, by_component, container, env_of, kinds, pod_spec


@pytest.fixture(scope="module")
def gc_docs(render: Render) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = render(
        values={
            "gc": {
                "enabled": True,
                "env": {
                    "RAGLINE_RETENTION_LEDGER_DAYS": 45,
                    "RAGLINE_RETENTION_CLAIM_CHECK_DAYS": "21",
                },
            }
        }
    )
    return docs


def _gc(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (cj,) = kinds(docs, "CronJob")
    result: dict[str, Any] = cj
    return result


def test_gc_is_off_by_default(render: Render) -> None:
    docs = render()
    assert not kinds(docs, "CronJob")
    assert "gc" not in by_component(docs, "NetworkPolicy")


def test_gc_cronjob(gc_docs: list[dict[str, Any]]) -> None:
    cj = _gc(gc_docs)
    assert cj["metadata"]["name"] == "rel-ragline-gc"
    assert "helm.sh/hook" not in cj["metadata"].get("annotations", {})
    spec = cj["spec"]
    assert spec["schedule"] == "17 3 * * *"
    assert spec["concurrencyPolicy"] == "Forbid"
    assert "timeZone" not in spec
    pod = pod_spec(cj)
    assert pod["restartPolicy"] == "Never"
    c = container(pod)
    assert c["args"] == ["gc"] and "command" not in c  # ENTRYPOINT is `ragline`
    env = env_of(pod)
    assert env["RAGLINE_RETENTION_LEDGER_DAYS"] == {
        "name": "RAGLINE_RETENTION_LEDGER_DAYS",
        "value": "45",
    }
    assert env["RAGLINE_RETENTION_CLAIM_CHECK_DAYS"]["value"] == "21"
    # the same non-secret settings as the services (the release's ConfigMap)
    (cm,) = [m for m in kinds(gc_docs, "ConfigMap") if "RAGLINE_KAFKA_BOOTSTRAP" in m["data"]]
    assert c["envFrom"] == [{"configMapRef": {"name": cm["metadata"]["name"]}}]
    kubernetes_validate.validate(cj, "1.30", strict=True)


def test_gc_uses_the_admin_dsn_of_the_migrate_job_and_nothing_else(
    gc_docs: list[dict[str, Any]],
) -> None:
    env = env_of(pod_spec(_gc(gc_docs)))
    migrate = env_of(pod_spec(by_component(gc_docs, "Job")["migrate"]))
    assert env["RAGLINE_PG_DSN"] == migrate["RAGLINE_PG_DSN"]
    assert env["RAGLINE_PG_DSN"]["valueFrom"]["secretKeyRef"] == {
        "name": "ragline-postgres",
        "key": "dsn",
    }
    for name in (
        "RAGLINE_PG_QUERY_DSN",
        "RAGLINE_QUERY_JWT_SECRET",
        "RAGLINE_OPENSEARCH_PASSWORD",
        "RAGLINE_CONNECTOR_WEBHOOK_SECRET",
    ):
        assert name not in env


def test_gc_pod_is_locked_down_like_the_others(gc_docs: list[dict[str, Any]]) -> None:
    pod = pod_spec(_gc(gc_docs))
    parser = by_component(gc_docs, "Deployment")["parser"]["spec"]["template"]["spec"]
    assert pod["securityContext"] == parser["securityContext"]
    assert container(pod)["securityContext"] == container(parser)["securityContext"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == parser["serviceAccountName"]
    res = container(pod)["resources"]
    assert res["requests"]["memory"] and res["limits"]["cpu"]
    vols = {v["name"]: v for v in pod["volumes"]}
    assert {m["mountPath"] for m in container(pod)["volumeMounts"]} >= {"/tmp", "/cache"}
    assert "emptyDir" in vols["tmp"] and "emptyDir" in vols["cache"]
    np = by_component(gc_docs, "NetworkPolicy")["gc"]
    assert np["spec"]["ingress"] == []
    assert np["spec"]["podSelector"]["matchLabels"].items() <= (
        _gc(gc_docs)["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"].items()
    )


def test_gc_schedule_arguments_and_inline_credentials(render: Render) -> None:
    docs = render(
        values={
            "gc": {
                "enabled": True,
                "schedule": "0 */6 * * *",
                "timeZone": "Etc/UTC",
                "extraArgs": ["--dry-run", "--json"],
            },
            "postgres": {
                "existingSecret": "",
                "dsn": "postgresql://a:SENTINEL-GC@pg/r",
                "queryDsn": "postgresql://q:SENTINEL-Q@pg/r",
            },
        }
    )
    cj = _gc(docs)
    assert cj["spec"]["schedule"] == "0 */6 * * *" and cj["spec"]["timeZone"] == "Etc/UTC"
    pod = pod_spec(cj)
    assert container(pod)["args"] == ["gc", "--dry-run", "--json"]
    # evaluation mode: the chart's Secret (the CronJob is no hook: never the hook copy)
    (secret,) = [d for d in kinds(docs, "Secret") if "annotations" not in d["metadata"]]
    ref = env_of(pod)["RAGLINE_PG_DSN"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": secret["metadata"]["name"], "key": "dsn"}
    assert "SENTINEL" not in str(cj)


@pytest.mark.parametrize(
    "bad",
    [
        {"gc": {"enabled": True, "env": {"RAGLINE_PG_DSN": "postgresql://x"}}},
        {"gc": {"enabled": True, "env": {"RAGLINE_LOG_LEVEL": "DEBUG"}}},  # top-level env
        {"gc": {"enabled": True, "schedule": "daily"}},
        {"gc": {"enabled": True, "concurrencyPolicy": "Allow"}},
        {"gc": {"enabled": True, "resources": {"limits": None}}},  # limits are required
    ],
)
def test_gc_schema_refusals(render: Render, bad: dict[str, Any]) -> None:
    render(values=bad, fail=True)


def test_documented_retention_variables_are_real_settings(env_names: set[str]) -> None:
    """The RAGLINE_RETENTION_* names shown in values.yaml and docs/deployment.md must be
    fields of the code's RetentionSettings (built in parallel: skipped until it exists)."""
    documented = set()
    for path in (CHART / "values.yaml", REPO / "docs" / "deployment.md"):
        documented |= set(re.findall(r"RAGLINE_RETENTION_[A-Z0-9_]*[A-Z0-9]", path.read_text()))
    assert documented, "values.yaml documents no RAGLINE_RETENTION_* example"
    real = {n for n in env_names if n.startswith("RAGLINE_RETENTION_")}
    if not real:
        pytest.skip("no RetentionSettings (RAGLINE_RETENTION_*) in libs/ yet")
    assert documented <= real, documented - real
