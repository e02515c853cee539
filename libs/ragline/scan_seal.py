"""The scanner's seal: a digest binding the text fields of a document to the scan.

Every text-bearing field that travels after the scanner (a document's title, uri,
version, series, mime type, supersedes ids and metadata values; the parsed document's
blocks, cells, section paths and title) is sealed by the scanner when it emits them:
``scan_seal`` is a digest of exactly those fields as scanned. Every post-scanner
publish, read and index write checks it (``ragline.events.seal_problem``), so a value
that did not come out of the scanner, or was changed after it, cannot travel on: a raw
meta has no seal, a changed one has a seal of other content.

Only the scanner mints seals (``ragline.scanning.seal``); ``events`` only verifies.
import-linter forbids every other package to import this module (pyproject.toml,
contract ``scan-seal``), so no pipeline path can seal text the scanner did not emit.
The digest is not a secret-keyed MAC: it guards against code paths that carry text
around the scanner, not against a writer with direct access to the broker.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["SEAL_RE", "digest"]

SEAL_RE = r"^[0-9a-f]{32}$"
_DOMAIN = "ragline-scan-seal-v1"


def digest(kind: str, payload: Any) -> str:
    """The seal of ``payload`` (JSON-able: a model's ``model_dump(mode="json")``) as a
    ``kind`` ("meta", "document")."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    h = hashlib.sha256(f"{_DOMAIN}\0{kind}\0".encode())
    h.update(body.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]
