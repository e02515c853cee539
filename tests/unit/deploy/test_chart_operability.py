"""Regression tests of the chart and alert defects of issue 16 (each fails on the chart
before the fix), then the extension points platform teams expect. Rendered by the real
helm binary; alert rules read as Prometheus Operator would scrape and evaluate them."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest
import yaml
from _deploy_helpers import CHART, LIBS, REPO, Render, by_component, container, kinds, pod_spec

from ragline.catalog import SERVICES
from ragline.runtime.topology import TOPOLOGY

CONSUMERS = [t.name for t in TOPOLOGY]
# labels Prometheus Operator sets on every scraped series (a metric label of the same name
# is renamed to exported_<name> without honorLabels, so rules selecting it never match)
TARGET_LABELS = {"service", "namespace", "pod", "job", "instance", "endpoint", "container"}
_AGG = re.compile(r"\b(sum|max|min|avg|count|topk|bottomk|quantile)\s*(by\s*\(([^)]*)\))?\s*\(")
_SELECTOR = re.compile(r"\b(ragline_[a-z0-9_]+)\{([^}]*)\}")
_SERIES_SUFFIX = re.compile(r"_(bucket|sum|count|total|created)$")


def _comp(name: str) -> str:
    return name.replace("_", "-")


def _rules(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (rule,) = kinds(docs, "PrometheusRule")
    return [r for g in rule["spec"]["groups"] for r in g["rules"]]


def metric_labels() -> dict[str, tuple[str, ...]]:
    """``metric name -> label names`` of every prometheus-client metric of the code (AST:
    third positional argument or ``labelnames=``)."""
    out: dict[str, tuple[str, ...]] = {}
    for root in (LIBS, REPO / "services"):
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not (isinstance(node, ast.Call) and node.args):
                    continue
                fn = node.func
                kind = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
                first = node.args[0]
                if kind not in {"Counter", "Gauge", "Histogram", "Summary"}:
                    continue
                if not (
                    isinstance(first, ast.Constant) and str(first.value).startswith("ragline_")
                ):
                    continue
                labels: Any = node.args[2] if len(node.args) > 2 else None
                for kw in node.keywords:
                    if kw.arg == "labelnames":
                        labels = kw.value
                names: tuple[str, ...] = ()
                if isinstance(labels, ast.List | ast.Tuple):
                    names = tuple(str(e.value) for e in labels.elts if isinstance(e, ast.Constant))
                out[str(first.value)] = names
    return out


@pytest.fixture(scope="module")
def docs(render: Render) -> list[dict[str, Any]]:
    return render(values={"metrics": {"prometheusRule": {"enabled": True}}})


# ----------------------------------------------------------------- 1. queryFrom


def test_query_from_restricts_the_api_even_with_open_metrics(render: Render) -> None:
    """The metrics rule must not open the API port: with ``metricsFrom: []`` (scrapers from
    anywhere) and ``queryFrom`` set, only ``queryFrom`` reaches the API."""
    peer = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}}
    docs = render(values={"networkPolicy": {"metricsFrom": [], "queryFrom": [peer]}})
    query = pod_spec(by_component(docs, "Deployment")["query"])
    ports = {p["name"]: p["containerPort"] for p in container(query)["ports"]}
    api_port = ports["http"]
    np = by_component(docs, "NetworkPolicy")["query"]
    for rule in np["spec"]["ingress"]:
        opened = {ports.get(p["port"], p["port"]) for p in rule["ports"]}
        if api_port in opened:
            assert peer in rule.get("from", []), f"API open to everyone by {rule}"
    assert any(
        api_port in {ports.get(p["port"]) for p in r["ports"]} for r in np["spec"]["ingress"]
    )
    # and the scrapers still reach /metrics, on a port of its own
    assert ports["metrics"] != api_port
    svc = next(
        s for s in kinds(docs, "Service") if s["metadata"]["name"] == "rel-ragline-query-metrics"
    )
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics"


# ----------------------------------------------------------------- 2. label clash


def test_no_metric_label_clashes_with_prometheus_operator_target_labels() -> None:
    labels = metric_labels()
    assert labels["ragline_freshness_seconds"] == ("stage",)  # the scan works
    clashing = {m: set(ls) & TARGET_LABELS for m, ls in labels.items() if set(ls) & TARGET_LABELS}
    assert clashing == {}


def test_rules_and_dashboard_select_labels_the_metrics_have(docs: list[dict[str, Any]]) -> None:
    from test_chart_observability import dashboard_exprs

    labels = metric_labels()
    exprs = [r["expr"] for r in _rules(docs)] + dashboard_exprs()
    fresh = next(r for r in _rules(docs) if r["alert"] == "RaglineFreshnessSLOBreach")
    assert 'stage="indexer"' in fresh["expr"]
    for expr in exprs:
        for metric, selector in _SELECTOR.findall(expr):
            base = metric if metric in labels else _SERIES_SUFFIX.sub("", metric)
            have = set(labels.get(base, labels.get(f"{base}_total", ()))) | {"le"}
            used = {m.split("=")[0].strip().rstrip("!~") for m in selector.split(",") if m}
            assert used <= have | (TARGET_LABELS - {"service"}), (metric, used, have)


# ----------------------------------------------------------------- 3. probes


def test_consumer_probes_do_not_ask_the_metrics_thread(docs: list[dict[str, Any]]) -> None:
    deps = by_component(docs, "Deployment")
    for name in CONSUMERS:
        c = container(pod_spec(deps[_comp(name)]))
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert c[probe]["httpGet"]["path"] in {"/healthz", "/readyz"}, (name, probe)
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"


# ----------------------------------------------------------------- 4. alerts and pods


def test_every_alert_aggregation_keeps_the_namespace(docs: list[dict[str, Any]]) -> None:
    rules = _rules(docs)
    for r in rules:
        for _op, by, labels in _AGG.findall(r["expr"]):
            assert by, f"{r['alert']}: aggregation without `by` drops the namespace"
            assert "namespace" in {x.strip() for x in labels.split(",")}, r["alert"]


def test_target_down_alerts_match_the_scraped_services(docs: list[dict[str, Any]]) -> None:
    rules = {r["alert"]: r for r in _rules(docs)}
    down = rules["RaglineTargetDown"]["expr"]
    absent = rules["RaglineMetricsAbsent"]["expr"]
    assert "== 0" in down and absent.strip().startswith("absent(up{")
    scraped = [
        s["metadata"]["name"]
        for s in kinds(docs, "Service")
        if s["metadata"]["labels"].get("ragline.io/metrics") == "true"
    ]
    assert len(scraped) == len(SERVICES)
    for expr in (down, absent):
        (pattern,) = re.findall(r'service=~"([^"]+)"', expr)
        assert 'namespace="ragline"' in expr
        assert all(re.fullmatch(pattern, name) for name in scraped)
        assert not re.fullmatch(pattern, "rel-ragline-query")  # the API Service is not scraped


def test_hook_jobs_have_their_own_service_account(docs: list[dict[str, Any]]) -> None:
    accounts = {s["metadata"]["name"]: s for s in kinds(docs, "ServiceAccount")}
    for job in kinds(docs, "Job"):
        spec = pod_spec(job)
        name = spec.get("serviceAccountName", "default")
        assert name != "default" and name in accounts, job["metadata"]["name"]
        sa = accounts[name]["metadata"].get("annotations", {})
        # created before the Job (a hook with a lower weight), gone after the hooks
        assert sa["helm.sh/hook"] == job["metadata"]["annotations"]["helm.sh/hook"]
        assert int(sa["helm.sh/hook-weight"]) < int(
            job["metadata"]["annotations"]["helm.sh/hook-weight"]
        )
        assert "hook-succeeded" in sa["helm.sh/hook-delete-policy"]
        assert accounts[name]["automountServiceAccountToken"] is False


def test_query_pods_drain_before_stopping(docs: list[dict[str, Any]]) -> None:
    spec = pod_spec(by_component(docs, "Deployment")["query"])
    cmd = container(spec)["lifecycle"]["preStop"]["exec"]["command"]
    (seconds,) = re.findall(r"sleep\((\d+)\)", " ".join(cmd))
    assert 0 < int(seconds) < spec["terminationGracePeriodSeconds"]


def test_query_spreads_over_nodes_and_zones_by_default(render: Render) -> None:
    docs = render()
    dep = by_component(docs, "Deployment")["query"]
    spread = pod_spec(dep)["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
    }
    sel = dep["spec"]["selector"]["matchLabels"]
    assert all(c["labelSelector"]["matchLabels"] == sel for c in spread)
    assert all(c["whenUnsatisfiable"] == "ScheduleAnyway" for c in spread)
    own = [{"maxSkew": 2, "topologyKey": "x", "whenUnsatisfiable": "DoNotSchedule"}]
    docs = render(values={"services": {"query": {"topologySpreadConstraints": own}}})
    assert pod_spec(by_component(docs, "Deployment")["query"])["topologySpreadConstraints"] == own


def _egress_ports(np: dict[str, Any]) -> set[int]:
    return {p["port"] for r in np["spec"]["egress"] for p in r.get("ports", [])}


def test_egress_is_per_workload_and_per_destination(render: Render) -> None:
    pg = [{"ipBlock": {"cidr": "10.1.2.0/24"}}]
    docs = render(values={"networkPolicy": {"egress": {"postgres": {"ports": [5432], "to": pg}}}})
    nps = by_component(docs, "NetworkPolicy")
    assert not _egress_ports(nps["query"]) & {9092, 9093}  # the API never talks to Kafka
    assert 5432 not in _egress_ports(nps["topics"])  # the topics Job never to Postgres
    assert 9200 not in _egress_ports(nps["parser"])  # only query and indexer search
    assert {9092, 5432} <= _egress_ports(nps["parser"])
    assert 9200 in _egress_ports(nps["indexer"]) and 9200 in _egress_ports(nps["query"])
    for comp, np in nps.items():
        for rule in np["spec"]["egress"]:
            if 5432 in {p["port"] for p in rule.get("ports", [])}:
                assert rule["to"] == pg, comp  # Postgres only at its address


def test_default_ingress_publishes_only_the_api(render: Render) -> None:
    docs = render(values={"services": {"query": {"ingress": {"enabled": True}}}})
    ing = by_component(docs, "Ingress")["query"]
    paths = [p for rule in ing["spec"]["rules"] for p in rule["http"]["paths"]]
    assert paths
    for internal in ("/metrics", "/docs", "/openapi.json", "/healthz", "/readyz"):
        for p in paths:
            assert p["pathType"] in {"Prefix", "Exact"}
            assert not internal.startswith(p["path"].rstrip("/") + "/") and internal != p["path"]
    assert any("/v1/search".startswith(p["path"]) for p in paths)


def test_evaluation_secret_does_not_outlive_the_release(render: Render) -> None:
    docs = render(
        values={
            "postgres": {"existingSecret": "", "dsn": "postgresql://a@pg/r", "queryDsn": "q"},
            "auth": {"existingSecret": "", "jwtSecret": "j"},
        }
    )
    secrets = {s["metadata"]["name"]: s for s in kinds(docs, "Secret")}
    used_by_pods = {
        e["valueFrom"]["secretKeyRef"]["name"]
        for d in kinds(docs, "Deployment")
        for e in container(pod_spec(d)).get("env", [])
        if "valueFrom" in e
    }
    assert "rel-ragline-credentials" in used_by_pods
    for name in used_by_pods & set(secrets):  # ordinary: `helm uninstall` deletes it
        assert "helm.sh/hook" not in secrets[name]["metadata"].get("annotations", {})
    for s in secrets.values():  # a hook copy is deleted as soon as the hooks finish
        ann = s["metadata"].get("annotations", {})
        if "helm.sh/hook" in ann:
            assert {"hook-succeeded", "hook-failed"} <= set(
                ann["helm.sh/hook-delete-policy"].split(",")
            )
            assert set(s["data"]) == {"dsn", "query-dsn"}  # only what the migrate Job needs


# ----------------------------------------------------------------- 5. extension points


def test_extension_points_reach_every_pod_and_per_service_ones_only_theirs(render: Render) -> None:
    ca_vol = {"name": "corp-ca", "configMap": {"name": "corp-ca-bundle"}}
    ca_mount = {"name": "corp-ca", "mountPath": "/etc/ssl/corp", "readOnly": True}
    env = {"name": "SSL_CERT_FILE", "value": "/etc/ssl/corp/ca.crt"}
    env_from = {"secretRef": {"name": "my-extra"}}
    init = {"name": "wait", "image": "busybox:1.36", "command": ["true"]}
    sidecar = {"name": "proxy", "image": "envoyproxy/envoy:v1.31"}
    docs = render(
        values={
            "podDefaults": {
                "extraVolumes": [ca_vol],
                "extraVolumeMounts": [ca_mount],
                "extraEnv": [env],
                "extraEnvFrom": [env_from],
            },
            "services": {
                "query": {
                    "initContainers": [init],
                    "sidecars": [sidecar],
                    "podAnnotations": {"example.com/scrape": "no"},
                    "extraEnv": [{"name": "ONLY_QUERY", "value": "1"}],
                }
            },
            "gc": {"enabled": True},
        }
    )
    workloads = [d for d in docs if d.get("kind") in ("Deployment", "Job", "CronJob")]
    assert len(workloads) == len(SERVICES) + 3
    for d in workloads:
        spec = pod_spec(d)
        (c,) = [x for x in spec["containers"] if x["name"] not in ("proxy",)]
        where = d["metadata"]["name"]
        assert ca_vol in spec["volumes"] and ca_mount in c["volumeMounts"], where
        assert env in c["env"] and env_from in c["envFrom"], where
        is_query = where == "rel-ragline-query"
        assert ({"name": "ONLY_QUERY", "value": "1"} in c["env"]) == is_query
        assert (spec.get("initContainers") == [init]) == is_query
        assert (sidecar in spec["containers"]) == is_query
    query = by_component(docs, "Deployment")["query"]
    assert query["spec"]["template"]["metadata"]["annotations"]["example.com/scrape"] == "no"


@pytest.mark.parametrize(
    "bad",
    [
        {"podDefaults": {"extraEnv": [{"name": "RAGLINE_PG_DSN", "value": "postgresql://x"}]}},
        {"services": {"query": {"extraEnv": [{"name": "RAGLINE_QUERY_JWT_SECRET", "value": "x"}]}}},
        {"podDefaults": {"extraEnv": [{"value": "no name"}]}},
        {"podDefaults": {"sidecars": "not-a-list"}},
        {"services": {"query": {"preStopSleepSeconds": 600}}},
    ],
)
def test_schema_refuses_bad_extension_values(render: Render, bad: dict[str, Any]) -> None:
    render(values=bad, fail=True)


def test_credentials_through_extra_env_only_as_secret_refs(render: Render) -> None:
    ref = {"secretKeyRef": {"name": "corp-pg", "key": "dsn"}}
    docs = render(values={"podDefaults": {"extraEnv": [{"name": "RAGLINE_X", "valueFrom": ref}]}})
    assert any(
        e.get("valueFrom") == ref
        for d in kinds(docs, "Deployment")
        for e in container(pod_spec(d))["env"]
    )


def test_helm_test_pod_asks_every_service(docs: list[dict[str, Any]]) -> None:
    (pod,) = [
        d for d in kinds(docs, "Pod") if d["metadata"]["annotations"].get("helm.sh/hook") == "test"
    ]
    (c,) = pod["spec"]["containers"]
    assert c["command"] == ["python", "-m", "ragline.ops.healthcheck"]
    urls = {e["name"]: e["value"] for e in c["env"]}["RAGLINE_HEALTHCHECK_URL"].split(",")
    assert len(urls) == len(SERVICES) and all(u.endswith("/readyz") for u in urls)
    assert "http://rel-ragline-query:8080/readyz" in urls
    assert "http://rel-ragline-parser-metrics:9400/readyz" in urls
    assert c["securityContext"]["readOnlyRootFilesystem"] is True


def test_helm_test_pod_passes_restricted_network_policies(render: Render) -> None:
    peer = {"namespaceSelector": {"matchLabels": {"x": "y"}}}
    docs = render(values={"networkPolicy": {"metricsFrom": [peer], "queryFrom": [peer]}})
    (pod,) = kinds(docs, "Pod")
    labels = pod["metadata"]["labels"]
    for comp, np in by_component(docs, "NetworkPolicy").items():
        for rule in np["spec"]["ingress"]:
            froms = rule.get("from")
            if froms is None or (comp in ("connector",) and rule["ports"][0]["port"] == "http"):
                continue
            assert any(
                p.get("podSelector", {}).get("matchLabels", {}).items() <= labels.items()
                and "podSelector" in p
                for p in froms
            ), comp


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    for key in ("home", "icon", "sources", "maintainers", "kubeVersion", "appVersion"):
        assert chart.get(key), key
    assert all(m.get("name") for m in chart["maintainers"])
    assert (
        chart["icon"].endswith("docs/assets/ragline.svg")
        and (REPO / "docs/assets/ragline.svg").exists()
    )


def test_tracing_is_off_by_default_and_configurable(render: Render) -> None:
    from ragline.config import TracingSettings

    docs = render()
    (cm,) = [c for c in kinds(docs, "ConfigMap") if "RAGLINE_KAFKA_BOOTSTRAP" in c["data"]]
    assert not any(k.startswith("RAGLINE_TRACING_") for k in cm["data"])
    assert 4318 not in _egress_ports(by_component(docs, "NetworkPolicy")["parser"])
    url = "http://otel.observability:4318/v1/traces"
    docs = render(values={"tracing": {"enabled": True, "otlpEndpoint": url, "sampleRatio": 0.25}})
    (cm,) = [c for c in kinds(docs, "ConfigMap") if "RAGLINE_KAFKA_BOOTSTRAP" in c["data"]]
    env = {
        k.removeprefix("RAGLINE_TRACING_").lower(): v
        for k, v in cm["data"].items()
        if k.startswith("RAGLINE_TRACING_")
    }
    ts = TracingSettings(**env)
    assert ts.enabled and ts.otlp_endpoint == url and ts.sample_ratio == 0.25
    for np in by_component(docs, "NetworkPolicy").values():
        assert 4318 in _egress_ports(np)
