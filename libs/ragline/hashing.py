"""Content hashes and deterministic ids: the basis of idempotency."""

from __future__ import annotations

import hashlib
import hmac
import json
import unicodedata

from pydantic import BaseModel

__all__ = [
    "chunk_id",
    "content_hash",
    "keyed_digest",
    "meta_hash",
    "normalize_text",
    "sha256_hex",
]


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def keyed_digest(value: str, key: bytes) -> str:
    """A stand-in to print for an identifier that may hold a secret: equal ids give equal
    digests (correlate records and logs), and without the key nobody can test guesses of
    a low-entropy id against it. Not reversible; 80 bits are plenty to tell ids apart."""
    mac = hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return "hmac:" + mac.hexdigest()[:20]


def normalize_text(text: str) -> str:
    """NFC, unified newlines, trailing whitespace stripped per line and at the end."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n") + "\n"


def content_hash(data: bytes) -> str:
    """sha256 of the normalized source bytes: text is normalized, binary taken as is."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return sha256_hex(data)
    return sha256_hex(normalize_text(text))


def chunk_id(*parts: str | int) -> str:
    """``hash(document_id, content_hash, chunker version, position, ...)``."""
    h = hashlib.sha256()
    for p in parts:
        b = str(p).encode("utf-8")
        h.update(len(b).to_bytes(4, "big"))
        h.update(b)
    return h.hexdigest()


def meta_hash(meta: BaseModel) -> str:
    """sha256 of a model's canonical JSON: detects metadata-only changes. The scanner's
    seal is not metadata (a digest of the rest): a hash stays what it was before seals."""
    return sha256_hex(
        json.dumps(
            meta.model_dump(mode="json", exclude={"scan_seal"}),
            sort_keys=True,
            separators=(",", ":"),
        )
    )
