"""Fixtures shared by the unit tests: building a wheel from a copy of the sources."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_NOT_SOURCE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")

BuildWheel = Callable[[Path, Sequence[str], str], Path]


@pytest.fixture(scope="session")
def build_wheel(tmp_path_factory: pytest.TempPathFactory) -> BuildWheel:
    """``build_wheel(root, parts, pattern)``: copy ``parts`` of ``root`` (files or trees,
    without caches and build output) to a temporary directory, ``pip wheel`` it there
    (no dependencies, no build isolation: offline) and return the one wheel matching
    ``pattern``. The repository itself is never written to."""

    def build(root: Path, parts: Sequence[str], pattern: str) -> Path:
        src = tmp_path_factory.mktemp("wheel-src")
        for name in parts:
            if (root / name).is_dir():
                shutil.copytree(root / name, src / name, ignore=_NOT_SOURCE)
            else:
                shutil.copy(root / name, src / name)
        out = tmp_path_factory.mktemp("wheel")
        cmd = [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation"]
        proc = subprocess.run(
            [*cmd, "-q", "-w", str(out)],
            cwd=src,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        (whl,) = out.glob(pattern)
        return whl

    return build
