"""``ragline-client`` builds as a wheel on its own (from a copy of clients/python only),
declares httpx and pydantic as its only dependencies (the frameworks as extras), and the
built package imports and works in an isolated interpreter that has no ragline at all."""

from __future__ import annotations

import email
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pydantic
import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def client_wheel(build_wheel: Callable[..., Path]) -> Path:
    """Built from a copy of clients/python only."""
    return build_wheel(
        REPO / "clients" / "python", ("pyproject.toml", "README.md", "src"), "ragline_client-*.whl"
    )


def test_wheel_contents_and_metadata(client_wheel: Path) -> None:
    names = set(zipfile.ZipFile(client_wheel).namelist())
    pkg = REPO / "clients/python/src/ragline_client"
    for py in pkg.glob("*.py"):
        assert f"ragline_client/{py.name}" in names, py.name
    assert "ragline_client/py.typed" in names
    assert not any(n.startswith(("ragline/", "services/", "tests/")) for n in names)
    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = email.message_from_bytes(zipfile.ZipFile(client_wheel).read(meta_name))
    assert meta["Name"] == "ragline-client"
    requires = meta.get_all("Requires-Dist") or []
    plain = sorted(r.split(">")[0].split("=")[0].strip() for r in requires if "extra ==" not in r)
    assert plain == ["httpx", "pydantic"]
    extras = set(meta.get_all("Provides-Extra") or [])
    assert {"langchain", "llamaindex"} <= extras


def test_wheel_imports_without_ragline(client_wheel: Path, tmp_path: Path) -> None:
    """Only the wheel plus httpx/pydantic (and their own deps) on the path: ``-I`` ignores
    PYTHONPATH and the user site, and the venv's site-packages is not on the path."""
    target = tmp_path / "site"
    zipfile.ZipFile(client_wheel).extractall(target)
    deps = sorted({str(Path(m.__file__).parents[1]) for m in (httpx, pydantic)})
    code = (
        "import sys; sys.path[:0] = sys.argv[1:]\n"
        "import ragline_client as rc\n"
        "assert 'ragline' not in sys.modules and 'services' not in sys.modules\n"
        "assert rc.__file__.startswith(sys.argv[1])\n"
        "req = rc.search_request('q', top_k=3, filters={'source_type': 'wiki'})\n"
        "print(req.model_dump_json(exclude_unset=True))\n"
    )
    isolated = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(target), *deps],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert isolated.returncode == 0, isolated.stderr
    assert isolated.stdout.strip() == '{"query":"q","top_k":3,"filters":{"source_type":["wiki"]}}'
