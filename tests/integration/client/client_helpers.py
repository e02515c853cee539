"""Shared pieces of the ragline-client integration tests (a unique module name: test
modules import it, never ``conftest``, which another directory's conftest may shadow)."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from query_helpers import GROUP_A, make_token

REPO = Path(__file__).resolve().parents[3]
CLIENT_SRC = REPO / "clients" / "python" / "src"


@dataclass(frozen=True)
class Seeded:
    tenant: str
    # document ids each group may see
    visible_a: frozenset[str]
    visible_b: frozenset[str]

    def token(self, group: str = GROUP_A, **kw: object) -> str:
        return make_token(self.tenant, [group], **kw)  # type: ignore[arg-type]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a subprocess: this checkout's client package and libs first."""
    env = dict(os.environ)
    parts = [str(CLIENT_SRC), str(REPO / "libs"), str(REPO)]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.update(extra)
    return env


def connector_collect() -> Any:
    """The connector tests' topic reader (tests/integration/connector/conftest.py)."""
    path = Path(__file__).resolve().parents[1] / "connector" / "conftest.py"
    spec = importlib.util.spec_from_file_location("connector_test_helpers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.collect
