"""The filesystem source: scans a directory tree into documents with metadata, and turns
files into SourceChange events.

``document_id`` is ``<source name>:<relative POSIX path>``. ``source_seq`` is the newest
mtime in nanoseconds among the file, its sidecar and the policies above it, so editing a
sidecar or a policy yields a newer event even when the file itself is untouched.
Hidden entries (``.name``), editor leftovers and the metadata files themselves are not
documents.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import os
import stat
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ragline.connector.fs_meta import (
    POLICY_FILE,
    SIDECAR_SUFFIX,
    MetaFileError,
    Policy,
    build_meta,
    is_meta_file,
    load_policy,
    load_sidecar,
)
from ragline.connector.source import SourceItem
from ragline.errors import ConfigError
from ragline.events import (
    Classification,
    ContentRef,
    DocumentMeta,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
    derive_event_id,
)
from ragline.hashing import content_hash, meta_hash

__all__ = [
    "FileDoc",
    "FilesystemSource",
    "FsSourceConfig",
    "ScanResult",
    "derive_source_name",
    "rest_key",
]

_TEMP_SUFFIXES = ("~", ".tmp", ".swp", ".swx", ".part", ".crdownload")
_SLUG = "abcdefghijklmnopqrstuvwxyz0123456789_.-"


@dataclass(frozen=True, kw_only=True)
class FsSourceConfig:
    root: Path
    source: str = "fs"
    tenant_id: str
    by_reference: bool = False  # content_ref (file) instead of inline bytes
    uri_prefix: str | None = None  # e.g. https://share.example.com/docs/ ; default file://
    settle_s: float = 0.0  # skip files modified less than this long ago (still being written)
    trust: str | None = None  # default trust level when no policy says otherwise
    # readers of files no policy or sidecar gives acl_groups to (--default-groups); empty:
    # such files are readable by nobody (deny by default) and reported as ``no_readers``
    default_acl_groups: tuple[str, ...] = ()


def derive_source_name(root: Path) -> str:
    """The source name a directory gets when none is given: its own name as a slug
    (``~/Team Notes`` -> ``team-notes``), so two folders never share a source (and one
    sync can never plan to delete the other's documents) unless told to."""
    name = root.resolve().name.lower()
    slug = "".join(c if c in _SLUG else "-" for c in name).strip("-._")
    while "--" in slug:
        slug = slug.replace("--", "-")
    if not slug:
        raise ConfigError(f"cannot derive a source name from {str(root)!r}: pass --source")
    return slug


@dataclass(frozen=True, kw_only=True)
class FileDoc:
    rel: str
    document_id: str
    path: Path
    mtime_ns: int
    size: int
    source_seq: int
    meta: DocumentMeta
    meta_hash: str


@dataclass(kw_only=True)
class ScanResult:
    docs: dict[str, FileDoc] = field(default_factory=dict)  # by relative path
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> count
    errors: list[str] = field(default_factory=list)  # messages naming meta files, no content
    # present but not processable right now (being written, unreadable, invalid metadata):
    # neither re-emitted nor deleted, their previous state is kept
    held: set[str] = field(default_factory=set)

    def hold(self, rel: str, reason: str) -> None:
        self.skipped[reason] += 1
        self.held.add(rel)


def rest_key(meta: DocumentMeta) -> str:
    """Hash of everything but ACL + classification: equal means an ACL-only change."""
    return meta_hash(
        meta.model_copy(update={"acl_groups": (), "classification": Classification.INTERNAL})
    )


def _is_candidate(name: str) -> bool:
    return not (name.startswith(".") or is_meta_file(name) or name.endswith(_TEMP_SUFFIXES))


class FilesystemSource:
    """One directory tree of one tenant. Scans are blocking; call them in a thread."""

    def __init__(self, cfg: FsSourceConfig) -> None:
        if not cfg.source or any(c not in _SLUG for c in cfg.source):
            raise ConfigError(f"source name {cfg.source!r} must be a lowercase slug")
        self.cfg = cfg
        self.root = cfg.root.resolve()
        self._policy_cache: dict[str, tuple[int, Policy | MetaFileError]] = {}
        # per file: (policies + sidecar version) -> metadata, so an idle scan parses nothing
        self._meta_cache: dict[
            str, tuple[Any, tuple[DocumentMeta, str] | MetaFileError | None]
        ] = {}

    @property
    def name(self) -> str:
        return self.cfg.source

    @property
    def tenant_id(self) -> str:
        return self.cfg.tenant_id

    def document_id(self, rel: str) -> str:
        return f"{self.cfg.source}:{rel}"

    # ----------------------------------------------------------------- scanning

    def _policy(self, folder: Path, rel_folder: str) -> tuple[Policy | MetaFileError | None, int]:
        path = folder / POLICY_FILE
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            self._policy_cache.pop(rel_folder, None)
            return None, 0
        cached = self._policy_cache.get(rel_folder)
        if cached is None or cached[0] != mtime:
            try:
                parsed: Policy | MetaFileError = load_policy(path, rel_folder)
            except MetaFileError as exc:
                parsed = exc
            cached = (mtime, parsed)
            self._policy_cache[rel_folder] = cached
        return cached[1], mtime

    def _defaults(self, rel: str, path: Path) -> dict[str, Any]:
        mime, _ = mimetypes.guess_type(path.name)
        prefix = self.cfg.uri_prefix
        uri = prefix + quote(rel) if prefix is not None else path.as_uri()
        defaults: dict[str, Any] = {"source_type": "filesystem", "uri": uri, "mime_type": mime}
        if self.cfg.trust is not None:
            defaults["trust"] = self.cfg.trust
        if self.cfg.default_acl_groups:
            defaults["acl_groups"] = list(self.cfg.default_acl_groups)
        return defaults

    def owns(self, uri: str | None) -> bool:
        """Could a document with this stored ``uri`` have come from this tree? (A
        document of the same source name synced from another folder could not: sync
        never deletes it without ``--allow-deletes``.) Unknown (no uri): not provably
        foreign."""
        if uri is None:
            return True
        prefix = self.cfg.uri_prefix
        base = prefix if prefix is not None else self.root.as_uri().rstrip("/") + "/"
        return uri.startswith(base)

    def scan(self) -> ScanResult:
        if not self.root.is_dir():
            raise ConfigError(f"filesystem source root {self.root} is not a directory")
        result = ScanResult()
        now_ns = time.time_ns()
        # folder rel path -> (policies from the root down, newest policy mtime)
        chains: dict[str, tuple[tuple[Policy | MetaFileError, ...], int]] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            folder = Path(dirpath)
            rel_folder = folder.relative_to(self.root).as_posix()
            rel_folder = "" if rel_folder == "." else rel_folder
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            parent = rel_folder.rsplit("/", 1)[0] if "/" in rel_folder else ""
            chain, chain_mtime = chains.get(parent, ((), 0)) if rel_folder else ((), 0)
            policy, pmtime = self._policy(folder, rel_folder)
            if policy is not None:
                chain, chain_mtime = (*chain, policy), max(chain_mtime, pmtime)
            chains[rel_folder] = (chain, chain_mtime)
            names = set(filenames)
            for name in sorted(n for n in filenames if _is_candidate(n)):
                rel = f"{rel_folder}/{name}" if rel_folder else name
                self._scan_file(result, folder / name, rel, chain, chain_mtime, names, now_ns)
        return result

    def _scan_file(
        self,
        result: ScanResult,
        path: Path,
        rel: str,
        chain: tuple[Policy | MetaFileError, ...],
        chain_mtime: int,
        names: set[str],
        now_ns: int,
    ) -> None:
        broken = [p for p in chain if isinstance(p, MetaFileError)]
        if broken:
            result.hold(rel, "invalid_meta")
            result.errors.append(f"{rel}: governed by an invalid policy ({broken[0]})")
            return
        policies = [p for p in chain if isinstance(p, Policy)]
        if any(p.excludes(rel) for p in policies):
            result.skipped["excluded"] += 1
            return
        if "\n" in rel or "\r" in rel or len(rel) > 500:
            result.skipped["bad_path"] += 1
            return
        try:
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                if not path.resolve().is_relative_to(self.root):
                    result.skipped["outside_root"] += 1  # never publish what a link points at
                    return
                st = path.stat()
        except OSError:
            result.hold(rel, "unreadable")
            return
        if not stat.S_ISREG(st.st_mode):
            return
        if self.cfg.settle_s and now_ns - st.st_mtime_ns < self.cfg.settle_s * 1e9:
            result.hold(rel, "unsettled")
            return
        sidecar = (
            path.with_name(path.name + SIDECAR_SUFFIX)
            if path.name + SIDECAR_SUFFIX in names
            else None
        )
        try:
            side_st = sidecar.stat() if sidecar is not None else None
        except OSError:
            side_st = None
        side_key = (side_st.st_mtime_ns, side_st.st_size) if side_st is not None else None
        # the Policy objects themselves (compared by identity): a re-parsed policy is new
        key = (tuple(policies), side_key)
        cached = self._meta_cache.get(rel)
        if cached is None or cached[0] != key:
            cached = (key, self._meta_for(rel, path, policies, sidecar if side_st else None))
            self._meta_cache[rel] = cached
        outcome = cached[1]
        if outcome is None:
            result.skipped["ignored"] += 1
            return
        if isinstance(outcome, MetaFileError):
            result.hold(rel, "invalid_meta")
            result.errors.append(f"{rel}: {outcome}")
            return
        meta, mhash = outcome
        seq = max(st.st_mtime_ns, chain_mtime, side_key[0] if side_key else 0)
        result.docs[rel] = FileDoc(
            rel=rel,
            document_id=self.document_id(rel),
            path=path,
            mtime_ns=st.st_mtime_ns,
            size=st.st_size,
            source_seq=seq,
            meta=meta,
            meta_hash=mhash,
        )

    def _meta_for(
        self, rel: str, path: Path, policies: list[Policy], sidecar: Path | None
    ) -> tuple[DocumentMeta, str] | MetaFileError | None:
        """The file's metadata and its hash; None when its sidecar says ``ignore``."""
        layers = [p.meta for p in policies]
        try:
            if sidecar is not None:
                data, ignore = load_sidecar(sidecar)
                if ignore:
                    return None
                layers.append(data)
            meta = build_meta(self._defaults(rel, path), layers)
        except MetaFileError as exc:
            return exc
        return meta, meta_hash(meta)

    # ----------------------------------------------------------------- events

    def read(self, doc: FileDoc) -> bytes | None:
        """The file's bytes, or None if it changed while being read (retry later)."""
        try:
            data = doc.path.read_bytes()
            st = doc.path.stat()
        except OSError:
            return None
        if st.st_mtime_ns != doc.mtime_ns or st.st_size != len(data):
            return None
        return data

    def upsert_event_for(self, doc: FileDoc, data: bytes) -> SourceUpsert:
        common: dict[str, Any] = {
            "event_id": derive_event_id(f"{doc.document_id}\0{doc.source_seq}", "source.upsert"),
            "tenant_id": self.cfg.tenant_id,
            "document_id": doc.document_id,
            "source_seq": doc.source_seq,
            "content_hash": content_hash(data),
            "meta": doc.meta,
        }
        if self.cfg.by_reference:
            ref = ContentRef(kind="file", location=str(doc.path))
            return SourceUpsert(content_ref=ref, **common)
        return SourceUpsert(content_b64=base64.b64encode(data).decode("ascii"), **common)

    def delete_event(self, document_id: str, stored_seq: int | None) -> SourceDelete:
        seq = max(time.time_ns(), (stored_seq or 0) + 1)
        return SourceDelete(
            event_id=derive_event_id(f"{document_id}\0{seq}", "source.delete"),
            tenant_id=self.cfg.tenant_id,
            document_id=document_id,
            source_seq=seq,
        )

    def acl_event(self, doc: FileDoc) -> SourceAclChange:
        return SourceAclChange(
            event_id=derive_event_id(f"{doc.document_id}\0{doc.source_seq}", "source.acl"),
            tenant_id=self.cfg.tenant_id,
            document_id=doc.document_id,
            source_seq=doc.source_seq,
            acl_groups=doc.meta.acl_groups,
            classification=doc.meta.classification,
        )

    # ----------------------------------------------------------------- SyncSource

    async def items(self) -> AsyncIterator[SourceItem]:
        result = await asyncio.to_thread(self.scan)
        for doc in result.docs.values():
            yield SourceItem(
                document_id=doc.document_id,
                source_seq=doc.source_seq,
                meta_hash=doc.meta_hash,
                handle=doc,
                acl_groups=doc.meta.acl_groups,
            )
        for rel in sorted(result.held):
            yield SourceItem(
                document_id=self.document_id(rel), source_seq=0, meta_hash="", available=False
            )

    async def content_hash(self, item: SourceItem) -> str | None:
        data = await asyncio.to_thread(self.read, item.handle)
        return content_hash(data) if data is not None else None

    async def upsert_event(self, item: SourceItem) -> SourceUpsert | None:
        doc: FileDoc = item.handle
        data = await asyncio.to_thread(self.read, doc)
        return self.upsert_event_for(doc, data) if data is not None else None
