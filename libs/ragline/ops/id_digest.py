"""The key of the digests the operator tools print instead of a secret-bearing id.

``RAGLINE_OPS_ID_DIGEST_KEY`` when set (several operators' tools agree on digests);
otherwise a random key made once and kept beside the install's state
(``<state_dir>/ops/id-digest.key``, mode 0600), so one machine's runs agree.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from ragline.config import Settings
from ragline.ops.settings import OpsSettings

__all__ = ["id_digest_key"]


def id_digest_key(settings: Settings, ops: OpsSettings) -> bytes:
    if ops.id_digest_key is not None:
        return ops.id_digest_key.get_secret_value().encode("utf-8")
    path = Path(settings.state_dir) / "ops" / "id-digest.key"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another run made it meanwhile: use theirs
        return path.read_bytes()
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key
