"""Metadata for the filesystem source: per-folder ``_policy.yaml`` files and per-file
``<file>.meta.yaml`` sidecars, layered into one ``DocumentMeta``.

Layers, later overriding earlier key by key: the policy of the root, of each folder on
the way down, then the file's sidecar. ``metadata`` maps are merged; every other key
(``acl_groups`` included) is replaced, so a subfolder can narrow an ACL. A policy may
also list ``exclude`` globs (relative to its folder); a sidecar may say ``ignore: true``.
An invalid file is an error for every document it governs: those documents are skipped
rather than published with a guessed (possibly wider) ACL.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ragline.errors import RaglineError
from ragline.events import DocumentMeta

__all__ = [
    "POLICY_FILE",
    "SIDECAR_SUFFIX",
    "MetaFileError",
    "Policy",
    "build_meta",
    "is_meta_file",
    "load_policy",
    "load_sidecar",
]

POLICY_FILE = "_policy.yaml"
SIDECAR_SUFFIX = ".meta.yaml"
_MAX_META_FILE_BYTES = 256 * 1024
_META_KEYS = frozenset(DocumentMeta.model_fields)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster


class MetaFileError(RaglineError):
    """A policy or sidecar file is unreadable or invalid (the message names the field)."""


class Policy:
    """One parsed ``_policy.yaml``: metadata defaults and exclude globs for its folder."""

    __slots__ = ("exclude", "folder", "meta")

    def __init__(self, folder: str, meta: Mapping[str, Any], exclude: Sequence[str]) -> None:
        self.folder = folder  # relative to the root, '' for the root
        self.meta = dict(meta)
        self.exclude = tuple(exclude)

    def excludes(self, rel_path: str) -> bool:
        """``rel_path`` is relative to the source root (POSIX separators)."""
        local = rel_path[len(self.folder) + 1 :] if self.folder else rel_path
        name = local.rsplit("/", 1)[-1]
        return any(
            fnmatch.fnmatchcase(local, g) or fnmatch.fnmatchcase(name, g) for g in self.exclude
        )


def is_meta_file(name: str) -> bool:
    return name == POLICY_FILE or name.endswith(SIDECAR_SUFFIX)


def _load_mapping(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > _MAX_META_FILE_BYTES:
            raise MetaFileError(f"{path.name}: larger than {_MAX_META_FILE_BYTES} bytes")
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - safe
    except (OSError, UnicodeDecodeError) as exc:
        raise MetaFileError(f"{path.name}: unreadable ({type(exc).__name__})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise MetaFileError(f"{path.name}: invalid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MetaFileError(f"{path.name}: must be a mapping, got {type(data).__name__}")
    return {str(k): v for k, v in data.items()}


def _check_keys(path: Path, data: Mapping[str, Any], extra: frozenset[str]) -> None:
    unknown = sorted(set(data) - _META_KEYS - extra)
    if unknown:
        raise MetaFileError(f"{path.name}: unknown keys {unknown}")


def load_policy(path: Path, folder: str) -> Policy:
    data = _load_mapping(path)
    _check_keys(path, data, frozenset({"exclude"}))
    exclude = data.pop("exclude", None) or []
    if not isinstance(exclude, list) or not all(isinstance(g, str) for g in exclude):
        raise MetaFileError(f"{path.name}: exclude must be a list of glob strings")
    return Policy(folder, data, exclude)


def load_sidecar(path: Path) -> tuple[dict[str, Any], bool]:
    """The sidecar's metadata and whether it says ``ignore: true``."""
    data = _load_mapping(path)
    _check_keys(path, data, frozenset({"ignore"}))
    ignore = data.pop("ignore", False)
    if not isinstance(ignore, bool):
        raise MetaFileError(f"{path.name}: ignore must be true or false")
    return data, ignore


def _merge(layers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if key == "metadata" and isinstance(value, dict):
                base = merged.get("metadata")
                merged["metadata"] = {**(base if isinstance(base, dict) else {}), **value}
            else:
                merged[key] = value
    return merged


def build_meta(defaults: Mapping[str, Any], layers: Sequence[Mapping[str, Any]]) -> DocumentMeta:
    """``defaults`` (what the source derives) under the policy and sidecar layers."""
    data = _merge([defaults, *layers])
    if isinstance(data.get("acl_groups"), str):
        data["acl_groups"] = [data["acl_groups"]]
    try:
        return DocumentMeta.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(p) for p in first["loc"]) or "metadata"
        raise MetaFileError(f"invalid metadata field {field}: {first['msg']}") from None
