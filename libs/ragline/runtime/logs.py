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
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ragline.tracing import log_ids

__all__ = ["JsonFormatter", "RepeatLimiter", "configure_logging", "log_id"]

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


class RepeatLimiter(logging.Filter):
    """Lets one record per (logger, message template) through every ``window_s`` seconds
    from the Kafka client libraries; the next one to pass carries how many were held back
    (``suppressed``, also appended to its message). While a broker is away aiokafka logs
    "Unable to update metadata from …" thousands of times a minute: this keeps one line
    per window that says so, and every other logger untouched."""

    def __init__(
        self,
        window_s: float = 30.0,
        prefixes: tuple[str, ...] = ("aiokafka", "kafka"),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.window_s = window_s
        self.prefixes = prefixes
        self.clock = clock
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}  # -> (passed at, held)

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self.prefixes):
            return True
        key = (record.name, str(record.msg))
        now = self.clock()
        passed_at, held = self._seen.get(key, (float("-inf"), 0))
        if now - passed_at < self.window_s:
            self._seen[key] = (passed_at, held + 1)
            return False
        self._seen[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like this in the last {now - passed_at:.0f} s)"
            record.fields = {**(getattr(record, "fields", None) or {}), "suppressed": held}
        if len(self._seen) > 1000:  # templates, not values: this stays small; bound it anyway
            self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window_s}
        return True


def configure_logging(
    service: str, level: str = "INFO", id_key: str | None = None
) -> logging.Logger:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(service, id_key.encode() if id_key else None))
    handler.addFilter(RepeatLimiter())  # a broker away must not flood the logs
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
