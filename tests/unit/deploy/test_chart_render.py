"""The Helm chart, rendered by the real helm binary: lint, every service, probes on the
real endpoints, security context, autoscaling bounds, hooks, network policies, secrets
never inlined, and Kubernetes 1.30 schema validity."""

from __future__ import annotations

import base64
import json
from typing import Any

import kubernetes_validate
import pytest
import yaml
from _deploy_helpers import CHART, Render, by_component, kinds, pod_specs, run_helm

from ragline.catalog import SERVICES
from ragline.config import Settings
from ragline.runtime.service_main import http_port
from ragline.runtime.topology import TOPOLOGY

PROD = "values-production.yaml"
CONSUMERS = {t.name: tuple(str(x) for x in t.consumes) for t in TOPOLOGY}
SECRET_ENV = {
    "RAGLINE_PG_DSN",
    "RAGLINE_PG_QUERY_DSN",
    "RAGLINE_OPENSEARCH_USER",
    "RAGLINE_OPENSEARCH_PASSWORD",
    "RAGLINE_QUERY_JWT_SECRET",
    "RAGLINE_QUERY_JWT_PUBLIC_KEY",
    "RAGLINE_CONNECTOR_WEBHOOK_SECRET",
    "RAGLINE_KAFKA_SASL_USERNAME",
    "RAGLINE_KAFKA_SASL_PASSWORD",
}
CRDS = {"ServiceMonitor", "ScaledObject", "PrometheusRule", "TriggerAuthentication"}
KEDA_ALL = {
    "services": {
        n: {"keda": {"enabled": True, "minReplicas": 1, "maxReplicas": 6, "lagThreshold": 10}}
        for n in CONSUMERS
    }
}


def _comp(name: str) -> str:
    return name.replace("_", "-")


def _container(spec: dict[str, Any]) -> dict[str, Any]:
    (c,) = spec["containers"]
    return c


def _env(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in _container(spec).get("env", [])}


@pytest.fixture(scope="module")
def default_docs(render: Render) -> list[dict[str, Any]]:
    return render()


@pytest.fixture(scope="module")
def prod_docs(render: Render) -> list[dict[str, Any]]:
    return render(PROD)


@pytest.mark.parametrize("files", [(), (PROD,)])
def test_helm_lint(helm: list[str], files: tuple[str, ...]) -> None:
    args = ["lint", str(CHART), "--strict"]
    for f in files:
        args += ["-f", str(CHART / f)]
    proc = run_helm(helm, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 chart(s) failed" in proc.stdout


@pytest.mark.parametrize("which", ["default", "prod"])
def test_every_service_is_a_deployment_of_one_image(
    which: str, default_docs: list[dict[str, Any]], prod_docs: list[dict[str, Any]]
) -> None:
    docs = default_docs if which == "default" else prod_docs
    deps = by_component(docs, "Deployment")
    assert set(deps) == {_comp(s) for s in SERVICES}
    images = set()
    for name in SERVICES:
        spec = deps[_comp(name)]["spec"]["template"]["spec"]
        c = _container(spec)
        assert c["args"] == ["run", name]
        assert "command" not in c  # the image's ENTRYPOINT is `ragline`
        images.add(c["image"])
    assert len(images) == 1
    if which == "prod":
        assert images == {"registry.example.com/platform/ragline:0.1.0"}
        assert spec["imagePullSecrets"] == [{"name": "registry-credentials"}]


def test_image_digest_wins(render: Render) -> None:
    digest = "sha256:" + "a" * 64
    docs = render(values={"image": {"digest": digest}})
    for _, spec in pod_specs(docs):
        assert _container(spec)["image"] == f"ghcr.io/your-org/ragline@{digest}"


def test_query_service_ingress_and_hpa(
    default_docs: list[dict[str, Any]], prod_docs: list[dict[str, Any]]
) -> None:
    svc = {d["metadata"]["name"]: d for d in kinds(default_docs, "Service")}
    query = svc["rel-ragline-query"]
    assert query["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}
    ]
    assert query["spec"]["selector"]["app.kubernetes.io/component"] == "query"
    assert not kinds(default_docs, "Ingress") and not kinds(default_docs, "HorizontalPodAutoscaler")
    assert by_component(default_docs, "Deployment")["query"]["spec"]["replicas"] == 2

    ing = by_component(prod_docs, "Ingress")["query"]
    paths = ing["spec"]["rules"][0]["http"]["paths"]
    assert {p["backend"]["service"]["name"] for p in paths} == {"rel-ragline-query"}
    assert ing["spec"]["tls"][0]["secretName"] == "ragline-tls"
    (hpa,) = kinds(prod_docs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "rel-ragline-query"
    metric_types = [m["type"] for m in hpa["spec"]["metrics"]]
    assert metric_types == ["Resource", "Pods"]  # CPU + requests/s
    # the HPA owns the replica count: the Deployment must not fight it on upgrade
    assert "replicas" not in by_component(prod_docs, "Deployment")["query"]["spec"]
    webhook = by_component(prod_docs, "Ingress")["connector"]
    assert webhook["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/v1/changes"


@pytest.mark.parametrize("which", ["default", "prod"])
def test_consumer_replicas_never_exceed_partitions(
    which: str, default_docs: list[dict[str, Any]], prod_docs: list[dict[str, Any]]
) -> None:
    docs = default_docs if which == "default" else prod_docs
    (cm,) = [c for c in kinds(docs, "ConfigMap") if "RAGLINE_KAFKA_PARTITIONS" in c["data"]]
    partitions = int(cm["data"]["RAGLINE_KAFKA_PARTITIONS"])
    deps = by_component(docs, "Deployment")
    for name in CONSUMERS:
        assert deps[_comp(name)]["spec"].get("replicas", 1) <= partitions
    for so in kinds(docs, "ScaledObject"):
        assert so["spec"]["maxReplicaCount"] <= partitions


def test_too_many_replicas_are_refused(render: Render) -> None:
    (err,) = render(values={"services": {"embedder": {"replicas": 7}}}, fail=True)
    assert "exceeds kafka.partitions (6)" in err["error"]
    (err,) = render(
        values={"services": {"parser": {"keda": {"enabled": True, "maxReplicas": 9}}}}, fail=True
    )
    assert "keda.maxReplicas (9) exceeds kafka.partitions" in err["error"]
    # more partitions, more replicas: fine
    docs = render(values={"kafka": {"partitions": 12}, "services": {"embedder": {"replicas": 7}}})
    assert by_component(docs, "Deployment")["embedder"]["spec"]["replicas"] == 7


def _lane_triggers(name: str, topics: tuple[str, ...], prefix: str = "") -> list[tuple[str, str]]:
    from ragline.runtime.lanes import lane_inputs
    from ragline.runtime.topology import consumer_group, physical_topic

    return [
        (consumer_group(name, prefix, lane), physical_topic(t, prefix))
        for lane, lane_topics in lane_inputs(topics).items()
        for t in lane_topics
    ]


def test_keda_scales_each_consumer_group_on_its_topics(render: Render) -> None:
    docs = render(values=KEDA_ALL)
    objs = by_component(docs, "ScaledObject")
    deps = by_component(docs, "Deployment")
    assert set(objs) == {_comp(n) for n in CONSUMERS}
    for name, topics in CONSUMERS.items():
        so = objs[_comp(name)]
        assert so["spec"]["scaleTargetRef"]["name"] == deps[_comp(name)]["metadata"]["name"]
        triggers = so["spec"]["triggers"]
        assert {t["type"] for t in triggers} == {"kafka"}
        # both lanes: the interactive group on its topics, the bulk group on `.bulk`
        assert [
            (t["metadata"]["consumerGroup"], t["metadata"]["topic"]) for t in triggers
        ] == _lane_triggers(name, topics)
        assert all(t["metadata"]["allowIdleConsumers"] == "false" for t in triggers)
        assert "replicas" not in deps[_comp(name)]["spec"]  # KEDA owns it


def test_consumer_group_names_match_the_runtime() -> None:
    from ragline.runtime import consumer
    from ragline.runtime.topology import consumer_group

    src = consumer.__loader__.get_source(consumer.__name__) or ""  # type: ignore[union-attr]
    assert '"group_id": consumer_group(self.stage.name, self.prefix, lane)' in src
    assert consumer_group("parser", "stg.", "bulk") == "stg.ragline-parser-bulk"
    assert {consumer_group(n) for n in CONSUMERS} == {f"ragline-{n}" for n in CONSUMERS}
    assert consumer_group("parser", "stg.") == "stg.ragline-parser"


def test_topic_prefix_reaches_keda_and_the_runtime(render: Render) -> None:

    docs = render(values={**KEDA_ALL, "kafka": {"topicPrefix": "stg."}})
    (cm,) = [c for c in kinds(docs, "ConfigMap") if "RAGLINE_KAFKA_TOPIC_PREFIX" in c["data"]]
    prefix = cm["data"]["RAGLINE_KAFKA_TOPIC_PREFIX"]
    assert prefix == "stg." and Settings(kafka_topic_prefix=prefix).kafka_topic_prefix == prefix
    for name, topics in CONSUMERS.items():
        triggers = by_component(docs, "ScaledObject")[_comp(name)]["spec"]["triggers"]
        assert [
            (t["metadata"]["consumerGroup"], t["metadata"]["topic"]) for t in triggers
        ] == _lane_triggers(name, topics, prefix)
    render(values={"kafka": {"topicPrefix": "bad prefix/"}}, fail=True)


def test_topic_configs_come_from_values(render: Render) -> None:
    from ragline.runtime.topics import TopicSettings

    docs = render(values={"kafka": {"topics": {"rawRetentionHours": 12, "minInsyncReplicas": 2}}})
    job = by_component(docs, "Job")["topics"]
    env = {k: v["value"] for k, v in _env(job["spec"]["template"]["spec"]).items() if "value" in v}
    ts = TopicSettings(
        **{
            k.removeprefix("RAGLINE_TOPICS_").lower(): v
            for k, v in env.items()
            if k.startswith("RAGLINE_TOPICS_")
        }
    )
    assert ts.raw_retention_hours == 12 and ts.min_insync_replicas == 2
    assert ts.retention_hours == 168 and ts.compression == "zstd"
    # the gc CronJob checks its sweeps against the topics' real retention
    assert float(env["RAGLINE_RETENTION_KAFKA_RETENTION_DAYS"]) == 7
    assert float(env["RAGLINE_RETENTION_DLQ_RETENTION_DAYS"]) == 14


def test_probes_hit_the_real_endpoints(default_docs: list[dict[str, Any]]) -> None:
    deps = by_component(default_docs, "Deployment")
    (cm,) = [c for c in kinds(default_docs, "ConfigMap") if "RAGLINE_METRICS_PORT" in c["data"]]
    assert cm["data"]["RAGLINE_METRICS_HOST"] == "0.0.0.0"
    assert cm["data"]["RAGLINE_HTTP_HOST"] == "0.0.0.0"
    metrics_port = int(cm["data"]["RAGLINE_METRICS_PORT"])
    defaults = Settings(metrics_port=None, http_port=None)
    for name in SERVICES:
        c = _container(deps[_comp(name)]["spec"]["template"]["spec"])
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        probes = {k: c[k]["httpGet"] for k in ("startupProbe", "livenessProbe", "readinessProbe")}
        assert ports["metrics"] == metrics_port  # every service, the API's included
        if name == "query":
            assert ports == {"http": http_port("query", defaults), "metrics": metrics_port}
            assert probes["livenessProbe"] == {"path": "/healthz", "port": "http"}
            assert probes["startupProbe"] == {"path": "/healthz", "port": "http"}
            assert probes["readinessProbe"] == {"path": "/readyz", "port": "http"}
            assert "RAGLINE_HTTP_PORT" in _env(deps["query"]["spec"]["template"]["spec"])
        else:  # answered from the consumer loop's progress (runtime/health.py)
            assert probes["startupProbe"] == {"path": "/healthz", "port": "metrics"}
            assert probes["livenessProbe"] == {"path": "/healthz", "port": "metrics"}
            assert probes["readinessProbe"] == {"path": "/readyz", "port": "metrics"}
    connector = _container(deps["connector"]["spec"]["template"]["spec"])
    assert {p["name"]: p["containerPort"] for p in connector["ports"]}["http"] == http_port(
        "connector", defaults
    )


@pytest.mark.parametrize("which", ["default", "prod"])
def test_pods_are_locked_down(
    which: str, default_docs: list[dict[str, Any]], prod_docs: list[dict[str, Any]]
) -> None:
    docs = default_docs if which == "default" else prod_docs
    specs = pod_specs(docs)
    # + migrate and topics jobs (+ the gc CronJob, enabled in the production example)
    assert len(specs) == len(SERVICES) + (2 if which == "default" else 3)
    for where, spec in specs:
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] != 0, where
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        c = _container(spec)
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True, where
        assert sc["allowPrivilegeEscalation"] is False, where
        assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        vols = {v["name"]: v for v in spec["volumes"]}
        for path in ("/tmp", "/cache"):
            assert "emptyDir" in vols[mounts[path]], (where, path)
        res = c["resources"]
        assert res["requests"]["cpu"] and res["requests"]["memory"], where
        assert res["limits"]["cpu"] and res["limits"]["memory"], where


def test_pod_disruption_budgets(prod_docs: list[dict[str, Any]]) -> None:
    pdbs = by_component(prod_docs, "PodDisruptionBudget")
    deps = by_component(prod_docs, "Deployment")
    assert set(pdbs) == set(deps)
    for comp, pdb in pdbs.items():
        sel = deps[comp]["spec"]["selector"]["matchLabels"]
        assert pdb["spec"]["selector"]["matchLabels"] == sel
    assert pdbs["query"]["spec"] == {
        "minAvailable": 2,
        "selector": pdbs["query"]["spec"]["selector"],
    }
    assert pdbs["parser"]["spec"]["maxUnavailable"] == 1


def test_network_policies(prod_docs: list[dict[str, Any]]) -> None:
    nps = by_component(prod_docs, "NetworkPolicy")
    assert set(nps) == {_comp(s) for s in SERVICES} | {"migrate", "topics", "gc"}
    for comp, np in nps.items():
        spec = np["spec"]
        assert spec["policyTypes"] == ["Ingress", "Egress"]
        assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == comp
        egress_ports = {(p["port"], p["protocol"]) for r in spec["egress"] for p in r["ports"]}
        assert (53, "UDP") in egress_ports
        assert ((5432, "TCP") in egress_ports) == (comp != "topics")
        assert ((9093, "TCP") in egress_ports) == (comp not in ("query", "migrate"))
    assert nps["migrate"]["spec"]["ingress"] == [] and nps["gc"]["spec"]["ingress"] == []
    metrics_rule, api_rule = nps["query"]["spec"]["ingress"]
    assert metrics_rule["ports"] == [{"port": "metrics", "protocol": "TCP"}]
    assert api_rule["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert any(
        peer.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name")
        == "monitoring"
        for peer in metrics_rule["from"]
    )
    parser_in = nps["parser"]["spec"]["ingress"]
    assert [r["ports"] for r in parser_in] == [[{"port": "metrics", "protocol": "TCP"}]]


def test_service_account_and_service_monitor(prod_docs: list[dict[str, Any]]) -> None:
    (sa,) = [s for s in kinds(prod_docs, "ServiceAccount") if "annotations" not in s["metadata"]]
    assert sa["automountServiceAccountToken"] is False
    for d in kinds(prod_docs, "Deployment"):
        assert d["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    (sm,) = kinds(prod_docs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    wanted = sm["spec"]["selector"]["matchLabels"]
    scraped = [
        s for s in kinds(prod_docs, "Service") if wanted.items() <= s["metadata"]["labels"].items()
    ]
    assert {s["spec"]["selector"]["app.kubernetes.io/component"] for s in scraped} == {
        _comp(n) for n in SERVICES
    }
    assert all(
        sm["spec"]["endpoints"][0]["port"] in {p["name"] for p in s["spec"]["ports"]}
        for s in scraped
    )
    deps = by_component(prod_docs, "Deployment")
    for s in scraped:  # the metrics Service targets the port the container serves /metrics on
        comp = s["spec"]["selector"]["app.kubernetes.io/component"]
        c = _container(deps[comp]["spec"]["template"]["spec"])
        assert s["spec"]["ports"][0]["targetPort"] in {p["name"] for p in c["ports"]}
        assert s["spec"]["ports"][0]["targetPort"] == "metrics"
        if comp != "query":
            assert c["livenessProbe"]["httpGet"]["port"] == "metrics"


def test_migration_and_topic_jobs_are_hooks(default_docs: list[dict[str, Any]]) -> None:
    jobs = by_component(default_docs, "Job")
    assert set(jobs) == {"migrate", "topics"}
    args = {k: _container(j["spec"]["template"]["spec"])["args"] for k, j in jobs.items()}
    assert args == {"migrate": ["migrate"], "topics": ["topics", "create"]}
    for job in jobs.values():
        ann = job["metadata"]["annotations"]
        assert ann["helm.sh/hook"] == "pre-install,pre-upgrade"
        assert "before-hook-creation" in ann["helm.sh/hook-delete-policy"]
        spec = job["spec"]["template"]["spec"]
        assert spec["restartPolicy"] == "Never"
        c = _container(spec)
        # hooks run before the release's ConfigMap/ServiceAccount exist: their own one
        assert "envFrom" not in c and spec["serviceAccountName"] == "rel-ragline-hooks"
        env = _env(spec)
        assert env["RAGLINE_KAFKA_BOOTSTRAP"]["value"] == "kafka:9092"
    mig = _env(jobs["migrate"]["spec"]["template"]["spec"])
    assert set(mig) >= {"RAGLINE_PG_DSN", "RAGLINE_PG_QUERY_DSN"}
    assert "RAGLINE_PG_DSN" not in _env(jobs["topics"]["spec"]["template"]["spec"])


def test_jobs_can_be_turned_off(render: Render) -> None:
    docs = render(values={"migrations": {"enabled": False}, "topics": {"enabled": False}})
    assert not kinds(docs, "Job")


@pytest.mark.parametrize("which", ["default", "prod"])
def test_credentials_only_through_secret_refs(
    which: str, default_docs: list[dict[str, Any]], prod_docs: list[dict[str, Any]]
) -> None:
    docs = default_docs if which == "default" else prod_docs
    assert not kinds(docs, "Secret")  # existingSecret everywhere: the chart holds no secret
    for where, spec in pod_specs(docs):
        for name, e in _env(spec).items():
            if name in SECRET_ENV:
                assert "value" not in e and "secretKeyRef" in e["valueFrom"], (where, name)
    for cm in kinds(docs, "ConfigMap"):
        assert not SECRET_ENV & set(cm["data"]), cm["metadata"]["name"]
    env = {
        comp: _env(d["spec"]["template"]["spec"])
        for comp, d in by_component(docs, "Deployment").items()
    }
    # least privilege: the query service never sees the admin DSN, only it sees JWT keys
    assert "RAGLINE_PG_DSN" not in env["query"] and "RAGLINE_PG_QUERY_DSN" in env["query"]
    for comp, e in env.items():
        if comp != "query":
            assert "RAGLINE_PG_QUERY_DSN" not in e and "RAGLINE_QUERY_JWT_SECRET" not in e
            assert "RAGLINE_PG_DSN" in e, comp  # the claim-check store
        if comp != "connector":
            assert "RAGLINE_CONNECTOR_WEBHOOK_SECRET" not in e
    assert (
        env["connector"]["RAGLINE_CONNECTOR_WEBHOOK_SECRET"]["valueFrom"]["secretKeyRef"][
            "optional"
        ]
        is True
    )


def test_inline_evaluation_secrets_never_leave_the_secret(render: Render) -> None:
    sentinels = {
        "dsn": "postgresql://ragline:SENTINEL-PG-ADMIN@pg/ragline",
        "query-dsn": "postgresql://ragline_query:SENTINEL-PG-QUERY@pg/ragline",
        "jwt-secret": "SENTINEL-JWT",
        "webhook-secret": "SENTINEL-WEBHOOK",
        "opensearch-password": "SENTINEL-OS",
    }
    docs = render(
        values={
            "postgres": {
                "existingSecret": "",
                "dsn": sentinels["dsn"],
                "queryDsn": sentinels["query-dsn"],
            },
            "auth": {"existingSecret": "", "jwtSecret": sentinels["jwt-secret"]},
            "connector": {"webhook": {"existingSecret": "", "secret": sentinels["webhook-secret"]}},
            "opensearch": {"username": "ragline", "password": sentinels["opensearch-password"]},
        }
    )
    (secret,) = [d for d in kinds(docs, "Secret") if "annotations" not in d["metadata"]]
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert {k: decoded[k] for k in sentinels} == sentinels
    others = json.dumps([d for d in docs if d.get("kind") != "Secret"])
    refs_migrate = _env(by_component(docs, "Job")["migrate"]["spec"]["template"]["spec"])
    assert refs_migrate["RAGLINE_PG_DSN"]["valueFrom"]["secretKeyRef"]["name"] == (
        "rel-ragline-credentials-hook"
    )
    assert "SENTINEL" not in others
    name = secret["metadata"]["name"]
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for where, spec in pod_specs(docs)
        if not where.startswith("Job/")
        for e in _container(spec)["env"]
        if "valueFrom" in e
    }
    assert refs["RAGLINE_PG_DSN"] == {"name": name, "key": "dsn"}
    assert refs["RAGLINE_QUERY_JWT_SECRET"] == {"name": name, "key": "jwt-secret"}
    assert refs["RAGLINE_OPENSEARCH_PASSWORD"] == {"name": name, "key": "opensearch-password"}


def test_missing_credentials_are_refused(render: Render) -> None:
    (err,) = render(values={"postgres": {"existingSecret": ""}}, fail=True)
    assert "postgres: set existingSecret" in err["error"]
    (err,) = render(values={"auth": {"existingSecret": ""}}, fail=True)
    assert "needs a JWT key" in err["error"]
    (err,) = render(values={"env": {"RAGLINE_QUERY_JWT_SECRET": "x"}}, fail=True)
    assert "RAGLINE_QUERY_JWT_SECRET" in err["error"]  # the schema forbids secrets in env


@pytest.mark.parametrize(
    "bad",
    [
        {"podDefaults": {"securityContext": {"readOnlyRootFilesystem": False}}},
        {"podDefaults": {"podSecurityContext": {"runAsNonRoot": False}}},
        {"services": {"parser": {"replicas": "two"}}},
        {"services": {"parser": {"resourcez": {}}}},
        {"kafka": {"partitions": 0}},
        {"image": {"pullPolicy": "Sometimes"}},
    ],
)
def test_schema_refuses_bad_values(render: Render, bad: dict[str, Any]) -> None:
    render(values=bad, fail=True)


def test_every_env_name_is_a_real_setting(
    default_docs: list[dict[str, Any]],
    prod_docs: list[dict[str, Any]],
    render: Render,
    env_names: set[str],
) -> None:
    extra = render(
        values={
            "models": {
                "volume": {"emptyDir": {}},
                "embedderPath": "/models/m",
                "embedderName": "m",
                "tokenizerPath": "/models/m",
                "rerankPath": "/models/r",
            },
            "auth": {"jwksUrl": "https://idp/jwks", "issuer": "i", "audience": "a"},
            "connector": {"webhook": {"enabled": False}},
        }
    )
    seen: set[str] = set()
    for docs in (default_docs, prod_docs, extra):
        for cm in kinds(docs, "ConfigMap"):
            if "RAGLINE_KAFKA_BOOTSTRAP" in cm["data"]:
                seen |= set(cm["data"])
        for _, spec in pod_specs(docs):
            seen |= set(_env(spec))
    ragline = {n for n in seen if n.startswith("RAGLINE_")}
    assert ragline - env_names == set(), "env vars no settings class reads"
    assert {
        "RAGLINE_EMBEDDER_MODEL",
        "RAGLINE_QUERY_RERANK_MODEL_PATH",
        "RAGLINE_QUERY_JWT_JWKS_URL",
        "RAGLINE_CONNECTOR_WEBHOOK_ENABLED",
    } <= ragline


def test_models_volume_is_mounted_read_only(render: Render) -> None:
    docs = render(
        values={
            "models": {
                "volume": {"persistentVolumeClaim": {"claimName": "m"}},
                "embedderPath": "/models/bge",
            }
        }
    )
    for where, spec in pod_specs(docs):
        mounts = {m["mountPath"]: m for m in _container(spec)["volumeMounts"]}
        assert mounts["/models"]["readOnly"] is True, where
        vols = {v["name"]: v for v in spec["volumes"]}
        assert vols[mounts["/models"]["name"]]["persistentVolumeClaim"] == {"claimName": "m"}
    (cm,) = [c for c in kinds(docs, "ConfigMap") if "RAGLINE_KAFKA_BOOTSTRAP" in c["data"]]
    assert cm["data"]["RAGLINE_EMBEDDER_MODEL"] == "/models/bge"
    assert cm["data"]["RAGLINE_QUERY_EMBEDDING_MODEL_PATH"] == "/models/bge"


def test_config_change_rolls_the_pods(render: Render, default_docs: list[dict[str, Any]]) -> None:
    def sums(docs: list[dict[str, Any]]) -> set[str]:
        return {
            d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
            for d in kinds(docs, "Deployment")
        }

    before = sums(default_docs)
    after = sums(render(values={"env": {"RAGLINE_LOG_LEVEL": "DEBUG"}}))
    assert len(before) == 1 and len(after) == 1 and before != after


def test_disabling_a_service_removes_all_its_objects(render: Render) -> None:
    docs = render(values={"services": {"cache_invalidator": {"enabled": False}}})
    comps = {d["metadata"]["labels"].get("app.kubernetes.io/component") for d in docs}
    assert "cache-invalidator" not in comps


@pytest.mark.parametrize("variant", ["default", "prod", "everything"])
def test_manifests_are_valid_kubernetes_1_30(
    variant: str,
    render: Render,
    default_docs: list[dict[str, Any]],
    prod_docs: list[dict[str, Any]],
) -> None:
    if variant == "default":
        docs = default_docs
    elif variant == "prod":
        docs = prod_docs
    else:
        docs = render(
            PROD,
            values={
                **KEDA_ALL,
                "models": {"volume": {"emptyDir": {}}},
                "networkPolicy": {"egress": {"allowAll": True}},
            },
        )
    checked = 0
    for d in docs:
        if d["kind"] in CRDS:
            assert d["apiVersion"] in {"monitoring.coreos.com/v1", "keda.sh/v1alpha1"}
            continue
        kubernetes_validate.validate(d, "1.30", strict=True)
        checked += 1
    assert checked >= 30


def test_rendered_yaml_round_trips(default_docs: list[dict[str, Any]]) -> None:
    # names are DNS-1123 and unique per kind
    seen: set[tuple[str, str]] = set()
    for d in default_docs:
        key = (d["kind"], d["metadata"]["name"])
        assert key not in seen
        seen.add(key)
        assert "_" not in d["metadata"]["name"]
    assert yaml.safe_load(yaml.safe_dump(default_docs)) == default_docs
