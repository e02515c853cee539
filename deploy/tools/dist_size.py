"""Installed size of ragline with a set of extras, measured in an existing venv (no
Docker, no download): ragline's requirements as pyproject.toml states them (so the
numbers follow the checkout, not what the venv was installed from), then their closure
(markers evaluated, extras followed) over the installed distributions, summing the file
sizes their RECORD lists, ragline's own code excluded.

    python deploy/tools/dist_size.py                 # core (what the image installs)
    python deploy/tools/dist_size.py local eval dev  # what `make install` adds
    python deploy/tools/dist_size.py --json core local eval dev

The venv must hold every distribution of the closure (`make install` does)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

__all__ = ["closure", "dist_bytes", "main"]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


REPO = Path(__file__).resolve().parents[2]


def root_requirements(extras: set[str], pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in sorted(extras):
        reqs += project["optional-dependencies"][extra]
    return reqs


def closure(requirements: list[str]) -> set[str]:
    """Normalized names of the distributions ``requirements`` pull in, transitively."""
    seen: set[str] = set()
    todo: list[tuple[str, frozenset[str]]] = []
    for raw in requirements:
        req = Requirement(raw)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            todo.append((req.name, frozenset(req.extras)))
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, want = todo.pop()
        if (_norm(name), want) in done:
            continue
        done.add((_norm(name), want))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            print(f"warning: {name} is not installed here", file=sys.stderr)
            continue
        seen.add(_norm(dist.metadata["Name"]))
        for raw in dist.requires or []:
            req = Requirement(raw)
            envs = [{"extra": e} for e in (want or {""})]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            todo.append((req.name, frozenset(req.extras)))
    return seen


def dist_bytes(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for f in dist.files or []:
        path = Path(str(dist.locate_file(f)))
        if path.is_file():
            total += path.stat().st_size
    return total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("extras", nargs="*", help="extras of ragline ('core': none)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    extras = {e for e in args.extras if e != "core"}
    names = closure(root_requirements(extras))
    sizes = {n: dist_bytes(n) for n in sorted(names)}
    total = sum(sizes.values())
    if args.json:
        print(json.dumps({"extras": sorted(extras), "bytes": total, "dists": len(sizes)}))
    else:
        for n, b in sorted(sizes.items(), key=lambda kv: -kv[1])[:15]:
            print(f"{b / 2**20:10.1f} MiB  {n}")
        label = ", ".join(sorted(extras)) or "none"
        print(f"{total / 2**20:10.1f} MiB  total, {len(sizes)} distributions, extras: {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
