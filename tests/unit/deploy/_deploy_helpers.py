"""Helpers of the deployment tests (a uniquely named module: several directories
have a conftest.py, so tests never import from ``conftest``)."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "helm" / "ragline"
LIBS = REPO / "libs" / "ragline"

Render = Callable[..., list[dict[str, Any]]]


def load_tool(name: str) -> Any:
    """A script of deploy/tools (not a package) as a module."""
    spec = importlib.util.spec_from_file_location(name, REPO / "deploy" / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _load_get_helm() -> Any:
    return load_tool("get_helm")


def run_helm(helm: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*helm, *args], capture_output=True, text=True, timeout=120, check=False)


def kinds(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def by_component(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in kinds(docs, kind)}


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    """The pod spec of a Deployment, Job or CronJob."""
    spec = doc["spec"]
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    result: dict[str, Any] = spec["template"]["spec"]
    return result


def pod_specs(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(``Kind/name``, pod spec) of every Deployment, Job and CronJob."""
    out = []
    for d in docs:
        if d.get("kind") in ("Deployment", "Job", "CronJob"):
            out.append((f"{d['kind']}/{d['metadata']['name']}", pod_spec(d)))
    return out


def container(spec: dict[str, Any]) -> dict[str, Any]:
    (c,) = spec["containers"]
    result: dict[str, Any] = c
    return result


def env_of(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The container's ``env`` entries by name."""
    return {e["name"]: e for e in container(spec).get("env", [])}


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
