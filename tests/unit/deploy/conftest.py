"""Fixtures of the deployment tests: the real helm binary (fetched like CI fetches it,
deploy/tools/get_helm.py), chart rendering, and the environment variable names the
code's settings classes really read."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "helm" / "ragline"
LIBS = REPO / "libs" / "ragline"

Render = Callable[..., list[dict[str, Any]]]


def _load_get_helm() -> Any:
    spec = importlib.util.spec_from_file_location("get_helm", REPO / "deploy/tools/get_helm.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """``[helm binary]`` with private HELM_* dirs; skips (loudly) only if helm cannot be
    downloaded at all."""
    try:
        binary = _load_get_helm().ensure_helm()
    except Exception as exc:  # no registry reachable: say so, do not pass silently
        msg = f"HELM UNAVAILABLE, chart tests SKIPPED: {exc}"
        warnings.warn(msg, stacklevel=1)
        print(f"\n*** {msg} ***\n", file=sys.stderr)
        pytest.skip(msg)
    home = tmp_path_factory.mktemp("helm-home")
    old = {k: os.environ.get(k) for k in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")}
    for k in old:
        os.environ[k] = str(home / k.lower())
    yield [str(binary)]
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def run_helm(helm: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*helm, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="session")
def render(helm: list[str], tmp_path_factory: pytest.TempPathFactory) -> Render:
    """``render(*value_files, values={...}, fail=False)`` -> the rendered documents
    (hooks included); with ``fail=True`` returns ``[{"error": stderr}]`` and expects helm
    to refuse."""
    tmp = tmp_path_factory.mktemp("values")
    counter = [0]

    def _render(
        *files: str, values: dict[str, Any] | None = None, fail: bool = False
    ) -> list[dict[str, Any]]:
        args = ["template", "rel", str(CHART), "--namespace", "ragline"]
        for f in files:
            args += ["-f", str(CHART / f)]
        if values:
            counter[0] += 1
            path = tmp / f"override-{counter[0]}.yaml"
            path.write_text(yaml.safe_dump(values))
            args += ["-f", str(path)]
        proc = run_helm(helm, *args)
        if fail:
            assert proc.returncode != 0, "helm rendered values it should have refused"
            return [{"error": proc.stderr}]
        assert proc.returncode == 0, proc.stderr
        return [d for d in yaml.safe_load_all(proc.stdout) if d]

    return _render


def kinds(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def by_component(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in kinds(docs, kind)}


def pod_specs(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(``Kind/name``, pod spec) of every Deployment and Job."""
    out = []
    for d in docs:
        if d.get("kind") in ("Deployment", "Job"):
            out.append((f"{d['kind']}/{d['metadata']['name']}", d["spec"]["template"]["spec"]))
    return out


def settings_env_names() -> set[str]:
    """Every environment variable a settings class of the code reads (prefix + field, and
    validation aliases)."""
    from pydantic import AliasChoices
    from pydantic_settings import BaseSettings

    names: set[str] = set()
    for path in sorted(LIBS.rglob("*.py")):
        if "env_prefix=" not in path.read_text():
            continue
        module = ".".join(path.relative_to(LIBS.parent).with_suffix("").parts)
        mod = importlib.import_module(module)
        for obj in vars(mod).values():
            if not (isinstance(obj, type) and issubclass(obj, BaseSettings)):
                continue
            if obj is BaseSettings or obj.__module__ != mod.__name__:
                continue
            prefix = str(obj.model_config.get("env_prefix", ""))
            for fname, field in obj.model_fields.items():
                names.add(f"{prefix}{fname}".upper())
                alias = field.validation_alias
                if isinstance(alias, AliasChoices):
                    names.update(str(c).upper() for c in alias.choices if isinstance(c, str))
                elif isinstance(alias, str):
                    names.add(alias.upper())
    return names


@pytest.fixture(scope="session")
def env_names() -> set[str]:
    names = settings_env_names()
    assert "RAGLINE_KAFKA_BOOTSTRAP" in names and "RAGLINE_QUERY_JWT_SECRET" in names
    return names
