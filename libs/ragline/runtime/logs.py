"""JSON logs. Structured fields only: callers pass ids, counts and codes, never text.

``extra={"fields": {...}}`` adds fields; a key that looks like it carries content
(``text``, ``content``, ``body``, ``value``) is dropped as a last line of defence.

A document id is an identity that may hold a secret (a file name: the scanner blocks
such a document, ``secret_in_identity``, but every service logs before or around that):
a ``document_id`` field is written as a keyed digest, ``doc:<16 hex>`` (``log_id``), the
same in every service, never as given (issue 31). ``ragline.runtime.logs.log_id`` with the
install's ``RAGLINE_LOG_ID_KEY`` gives the digest of a known id to search the logs for.
"""

from __future__ import annotations

import hmac
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from ragline.tracing import log_ids

__all__ = ["JsonFormatter", "configure_logging", "log_id"]

_FORBIDDEN_KEYS = frozenset({"text", "content", "body", "value", "secret", "password"})
_ID_KEYS = frozenset({"document_id", "key", "document", "doc"})
_DEFAULT_ID_KEY = b"ragline-log-id-v1"


def log_id(document_id: str, key: bytes | None = None) -> str:
    """The keyed digest a log line carries for ``document_id``."""
    mac = hmac.new(key or _DEFAULT_ID_KEY, document_id.encode("utf-8", "replace"), "sha256")
    return "doc:" + mac.hexdigest()[:16]


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str, id_key: bytes | None = None) -> None:
        super().__init__()
        self.service = service
        self.id_key = id_key

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update(log_ids())  # trace_id / span_id of the current span (tracing on)
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(
                {
                    k: log_id(v, self.id_key) if k in _ID_KEYS and isinstance(v, str) else v
                    for k, v in fields.items()
                    if k not in _FORBIDDEN_KEYS
                }
            )
        if record.exc_info and record.exc_info[0] is not None:
            # class name only: exception messages from libraries may quote input
            out["exc_class"] = record.exc_info[0].__name__
        return json.dumps(out, default=str)


def configure_logging(
    service: str, level: str = "INFO", id_key: str | None = None
) -> logging.Logger:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(service, id_key.encode() if id_key else None))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in (
        "aiokafka",
        "kafka",
        "opensearch",
        "urllib3",
        "httpx",
        "faststream",
        "ragline.faststream",
    ):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return logging.getLogger(f"ragline.{service}")
