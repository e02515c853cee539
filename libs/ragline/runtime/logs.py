"""JSON logs. Structured fields only: callers pass ids, counts and codes, never text.

``extra={"fields": {...}}`` adds fields; a key that looks like it carries content
(``text``, ``content``, ``body``, ``value``) is dropped as a last line of defence.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from ragline.tracing import log_ids

__all__ = ["JsonFormatter", "configure_logging"]

_FORBIDDEN_KEYS = frozenset({"text", "content", "body", "value", "secret", "password"})


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

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
            out.update({k: v for k, v in fields.items() if k not in _FORBIDDEN_KEYS})
        if record.exc_info and record.exc_info[0] is not None:
            # class name only: exception messages from libraries may quote input
            out["exc_class"] = record.exc_info[0].__name__
        return json.dumps(out, default=str)


def configure_logging(service: str, level: str = "INFO") -> logging.Logger:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(service))
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
