"""Fixtures of the deployment tests: the real helm binary (fetched like CI fetches it,
deploy/tools/get_helm.py), chart rendering, and the environment variable names the
code's settings classes really read. Helpers live in ``_deploy_helpers``."""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _deploy_helpers import CHART, Render, _load_get_helm, run_helm, settings_env_names


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """``[helm binary]`` with private HELM_* dirs; skips (loudly) only if helm cannot be
    downloaded at all."""
    try:
        # one download at a time: `make test` runs the unit tests in 2 workers (xdist),
        # and both may ask for helm on a machine that has none yet
        with (Path(tempfile.gettempdir()) / "ragline-get-helm.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
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


@pytest.fixture(scope="session")
def env_names() -> set[str]:
    names = settings_env_names()
    assert "RAGLINE_KAFKA_BOOTSTRAP" in names and "RAGLINE_QUERY_JWT_SECRET" in names
    return names
