"""JVM engines (Apache Kafka, OpenSearch) as dependencies: each is a small POM shipped in
this package (``engines/<name>/pom.xml``), resolved by the machine's own Maven into a
cache outside the repository, and checked against a committed lock of SHA-256 digests
(``engines/<name>/jars.sha256``) every time it is used. Nothing is vendored.

``ensure_engine`` is idempotent and safe to call from concurrent processes (a file lock
per engine); a warm cache costs one digest pass over the jars. A missing ``java`` or
``mvn``, a Java older than 17, a failed fetch or a jar whose digest differs from the lock
each raise :class:`StackError` with one line that says what to do.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ragline.fsutil import file_lock, file_sha256
from ragline.platform.stack.errors import StackError

__all__ = [
    "MIN_JAVA",
    "Engine",
    "EngineJars",
    "default_cache_dir",
    "engine",
    "ensure_engine",
    "java_binary",
    "java_major",
    "read_lock",
    "relock",
]

MIN_JAVA = 17
_LOCK_NAME = "jars.sha256"
_POM_NAME = "pom.xml"
_VERSION_RE = re.compile(r"<ragline\.engine\.version>([^<]+)</ragline\.engine\.version>")


@dataclass(frozen=True, kw_only=True)
class Engine:
    """One engine's files in this package: its POM (which pins the version in the
    property ``ragline.engine.version``) and its lock of jar digests."""

    name: str
    home: Path

    @property
    def pom(self) -> Path:
        return self.home / _POM_NAME

    @property
    def lock(self) -> Path:
        return self.home / _LOCK_NAME

    @property
    def version(self) -> str:
        match = _VERSION_RE.search(self.pom.read_text())
        if match is None:
            raise StackError(self.name, f"{self.pom} has no <ragline.engine.version> property")
        return match.group(1).strip()

    def resource(self, name: str) -> Path:
        """Another file shipped beside the POM (a launcher source, a log4j2.xml)."""
        path = self.home / name
        if not path.is_file():
            raise StackError(self.name, f"missing engine file {path}")
        return path


@dataclass(frozen=True, kw_only=True)
class EngineJars:
    engine: Engine
    version: str
    directory: Path
    fetched: bool  # False: the cache was warm

    @property
    def classpath(self) -> str:
        return str(self.directory / "*")


def engine(name: str) -> Engine:
    """The engine shipped as ``ragline/platform/stack/engines/<name>/``."""
    home = Path(str(resources.files("ragline.platform.stack").joinpath("engines", name)))
    if not (home / _POM_NAME).is_file():
        raise StackError(name, f"no engine definition at {home}")
    return Engine(name=name, home=home)


def default_cache_dir() -> Path:
    """``$RAGLINE_ENGINE_CACHE``, else ``$XDG_CACHE_HOME/ragline/engines``, else
    ``~/.cache/ragline/engines``: outside any checkout, shared by every stack."""
    explicit = os.environ.get("RAGLINE_ENGINE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "ragline" / "engines"


def java_binary() -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH, checked to be Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not Path(candidate).is_file():
        raise StackError(
            "java",
            f"no Java runtime found (JAVA_HOME or java on PATH): the local Kafka and "
            f"OpenSearch need Java {MIN_JAVA}+, e.g. apt-get install openjdk-17-jre-headless",
        )
    major = java_major(candidate)
    if major < MIN_JAVA:
        raise StackError(
            "java", f"{candidate} is Java {major}; the local engines need Java {MIN_JAVA}+"
        )
    return candidate


def java_major(java: str) -> int:
    """The major version ``java -version`` reports (8 for 1.8)."""
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError("java", f"cannot run {java} -version: {exc}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        raise StackError("java", f"cannot read the version of {java}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def _mvn_binary() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StackError(
            "maven",
            "mvn not found on PATH: the local Kafka and OpenSearch jars are fetched from "
            "Maven Central by Maven, e.g. apt-get install maven",
        )
    return mvn


def read_lock(path: Path) -> dict[str, str]:
    """``{jar file name: sha256}`` from a lock file of ``<sha256>  <name>`` lines."""
    out: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            raise StackError(path.parent.name, f"{path}:{number}: not '<sha256>  <file>'")
        out[parts[1]] = parts[0]
    return out


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: file_sha256(p) for p in sorted(directory.glob("*.jar"))}


def _verify(eng: Engine, directory: Path, expected: dict[str, str]) -> None:
    found = _digests(directory)
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    if missing or extra:
        raise StackError(
            eng.name,
            f"jars in {directory} differ from {eng.lock}: missing {missing[:3]}, "
            f"unexpected {extra[:3]} (after a version change run `ragline stack engines "
            f"--relock`)",
        )
    for name, want in expected.items():
        if found[name] != want:
            raise StackError(
                eng.name,
                f"{directory / name}: sha256 {found[name]} but {eng.lock} expects {want} "
                "(a corrupt or tampered jar: delete the directory to fetch it again)",
            )


def _fetch(eng: Engine, version: str, target: Path) -> None:
    """Resolve the POM's runtime dependencies with Maven into ``target`` (a fresh dir)."""
    mvn = _mvn_binary()
    work = Path(tempfile.mkdtemp(prefix=f".{eng.name}-fetch-", dir=target.parent))
    try:
        shutil.copyfile(eng.pom, work / _POM_NAME)
        jars = work / "jars"
        argv = [
            mvn,
            "-q",
            "-B",
            "-C",  # fail on a checksum mismatch against the repository's own digests
            "-f",
            str(work / _POM_NAME),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={jars}",
        ]
        done = subprocess.run(
            argv, cwd=work, capture_output=True, text=True, timeout=1800, check=False
        )
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise StackError(
                eng.name,
                f"Maven could not fetch {eng.name} {version} (exit {done.returncode}): "
                + " | ".join(tail),
            )
        if target.exists():
            shutil.rmtree(target)
        jars.replace(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ensure_engine(eng: Engine, cache_dir: Path | None = None) -> EngineJars:
    """The engine's jars in the cache, fetched when absent, always checked against the
    lock. Raises :class:`StackError` with one line on any failure."""
    version = eng.version
    root = (cache_dir or default_cache_dir()).expanduser().resolve()
    directory = root / f"{eng.name}-{version}"
    expected = read_lock(eng.lock)
    if not expected:
        raise StackError(eng.name, f"{eng.lock} is empty: run `ragline stack engines --relock`")
    with file_lock(root / f".{eng.name}.lock"):
        fetched = False
        if not directory.is_dir() or set(expected) - {p.name for p in directory.glob("*.jar")}:
            _fetch(eng, version, directory)
            fetched = True
        _verify(eng, directory, expected)
    return EngineJars(engine=eng, version=version, directory=directory, fetched=fetched)


def relock(eng: Engine, cache_dir: Path | None = None) -> Path:
    """Fetch the engine afresh and write its lock from what Maven resolved (after a
    version change in the POM). Review the diff before committing it."""
    version = eng.version
    root = (cache_dir or default_cache_dir()).expanduser().resolve()
    directory = root / f"{eng.name}-{version}"
    with file_lock(root / f".{eng.name}.lock"):
        _fetch(eng, version, directory)
        digests = _digests(directory)
    lines = [f"# {eng.name} {version}: sha256 of every jar Maven resolves from pom.xml"]
    lines += [f"{digest}  {name}" for name, digest in digests.items()]
    eng.lock.write_text("\n".join(lines) + "\n")
    return eng.lock
